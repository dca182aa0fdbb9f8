// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCloudKit

/// Queries (CloudKitAtlas's "Query" section), over four places saved in a zone of this run.
extension Atlas {
    /// The places: name, location, count, description.
    static let places: [(name: String, location: Location, count: Int64, about: String)] = [
        ("Apple Park", applePark, 3, "the spaceship campus in Cupertino"),
        ("Infinite Loop", Location(latitude: 37.3318, longitude: -122.0312), 7, "the old campus in Cupertino"),
        ("Visitor Center", Location(latitude: 37.3327, longitude: -122.0053), 15, "a shop and a cafe across the road"),
        ("Eiffel Tower", Location(latitude: 48.8584, longitude: 2.2945), 12, "the iron lattice tower in Paris"),
    ]

    /// About 50 m north of Apple Park.
    static let nearApplePark = Location(latitude: 37.3349 + 0.00045, longitude: -122.0090)

    /// Saves the places in a zone of their own.
    func saveQueryRecords() async throws -> String {
        let zone = try await database.save(RecordZone(zoneName: "AtlasPlaces-\(run)"))
        madeZones.append(zone.zoneID)
        let records = Self.places.map { place in
            var record = Record(recordType: Self.itemType, zoneID: zone.zoneID)
            record["name"] = place.name
            record["location"] = place.location
            record["count"] = place.count
            record["about"] = place.about
            return record
        }
        let (results, _) = try await database.modifyRecords(saving: records, deleting: [])
        for result in results.values { _ = try result.get() }
        try check(results.count == records.count, "\(results.count) of \(records.count) places answered")
        placesZone = zone.zoneID
        return "\(records.count) places in zone \(zone.zoneID.zoneName)"
    }

    /// The names of the records matching `query` in `zone`, sorted by name.
    func names(_ query: Query, in zone: RecordZone.ID?) async throws -> [String] {
        var query = query
        query.sortDescriptors = [Query.SortDescriptor(key: "name", ascending: true)]
        let (matches, _) = try await database.records(matching: query, inZoneWith: zone)
        return try matches.map { match in
            let record = try match.1.get()
            return record["name"] as String? ?? "(no name)"
        }
    }

    /// Runs a query over the places and checks the names found; `shown` is the predicate with
    /// its arguments, for the report.
    func expect(_ query: Query, shown: String, _ expected: [String]) async throws -> String {
        let zone = try need(placesZone, from: "query-records")
        let found = try await names(query, in: zone)
        try check(found == expected, "\(shown): found \(found), expected \(expected)")
        return "\(shown) → \(found.joined(separator: ", "))"
    }

    /// `name == %@`.
    func queryEquality() async throws -> String {
        try await expect(Query(recordType: Self.itemType, predicate: "name == %@", "Apple Park"), shown: "name == 'Apple Park'", ["Apple Park"])
    }

    /// `%K == %@`: the key given at run time.
    func queryDynamicKey() async throws -> String {
        try await expect(Query(recordType: Self.itemType, predicate: "%K == %@", "name", "Eiffel Tower"), shown: "%K == %@ with name, 'Eiffel Tower'",
                         ["Eiffel Tower"])
    }

    /// `count > %d`.
    func queryComparison() async throws -> String {
        try await expect(Query(recordType: Self.itemType, predicate: "count > %d", 5), shown: "count > 5", ["Eiffel Tower", "Infinite Loop", "Visitor Center"])
    }

    /// Within 100 m of a point (`distanceToLocation:fromLocation:` in kilometres, CloudKit's `NEAR`).
    func queryNear() async throws -> String {
        try await expect(Query(recordType: Self.itemType, predicate: "distanceToLocation:fromLocation:(location, %@) < 0.1", Self.nearApplePark),
                         shown: "within 0.1 km of \(Self.nearApplePark)", ["Apple Park"])
    }

    /// Tokenized search over every string field (`self CONTAINS`), and over one field.
    func queryTokens() async throws -> String {
        let all = try await expect(Query(recordType: Self.itemType, predicate: "self CONTAINS %@", "campus cupertino"),
                                 shown: "self CONTAINS 'campus cupertino'", ["Apple Park", "Infinite Loop"])
        let one = try await expect(Query(recordType: Self.itemType, predicate: "about TOKENMATCHES[cdl] %@", "Lattice Tower"),
                                 shown: "about TOKENMATCHES[cdl] 'Lattice Tower'", ["Eiffel Tower"])
        return all + "; " + one
    }

    /// Several conditions at once: a comparison and a distance.
    func queryCompound() async throws -> String {
        try await expect(Query(recordType: Self.itemType, predicate: "count < %d AND distanceToLocation:fromLocation:(location, %@) < 5",
                               10, Self.nearApplePark),
                         shown: "count < 10 AND within 5 km of \(Self.nearApplePark)", ["Apple Park", "Infinite Loop"])
    }
}
