// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import UbiquityCore

/// The synthetic records of the records-server benchmark. Record `i` is the same everywhere (the
/// HTTP load, the GRDB and PostgreSQL baselines, wrk's Lua script): name `item-0000042`, and
/// four fields drawn from a generator seeded with `i`:
/// - `cat`: STRING, one of 100 values `c0`…`c99` (the equality filter);
/// - `rank`: INT64 in 0..<1,000,000 (the sort);
/// - `title`: STRING of about 20 characters;
/// - `where`: LOCATION, uniform over latitude 48.0–49.7, longitude 1.5–3.2 (≈ 189 × 125 km
///   around Paris; a 5 km NEAR circle inside it holds ≈ 0.33 % of the records).
struct BenchRecord {
    var name: String
    var category: String
    var rank: Int64
    var title: String
    var latitude: Double
    var longitude: Double

    static let categories = 100
    static let minLatitude = 48.0, maxLatitude = 49.7
    static let minLongitude = 1.5, maxLongitude = 3.2
    static let words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]

    init(_ index: Int) {
        var generator = SeededRandom(seed: UInt64(index) &* 0x9E37_79B9 &+ 17)
        name = BenchRecord.name(index)
        category = "c\(generator.next() % UInt64(BenchRecord.categories))"
        rank = Int64(generator.next() % 1_000_000)
        title = "\(BenchRecord.words[Int(generator.next() % 10)]) \(BenchRecord.words[Int(generator.next() % 10)]) \(index)"
        let u = Double(generator.next() >> 11) / Double(1 << 53), v = Double(generator.next() >> 11) / Double(1 << 53)
        latitude = ((BenchRecord.minLatitude + u * (BenchRecord.maxLatitude - BenchRecord.minLatitude)) * 1e6).rounded() / 1e6
        longitude = ((BenchRecord.minLongitude + v * (BenchRecord.maxLongitude - BenchRecord.minLongitude)) * 1e6).rounded() / 1e6
    }

    /// A row of the baseline's `items` table.
    init(row: Row) {
        name = row["name"]
        category = row["cat"]
        rank = row["rank"]
        title = row["title"]
        latitude = row["latitude"]
        longitude = row["longitude"]
    }

    static func name(_ index: Int) -> String {
        let digits = String(index)
        return "item-" + String(repeating: "0", count: max(0, 7 - digits.count)) + digits
    }

    /// The `records/modify` operation that creates the record.
    var createOperation: String {
        """
        {"operationType":"create","record":{"recordType":"Item","recordName":"\(name)","fields":{\
        "cat":{"value":"\(category)","type":"STRING"},"rank":{"value":\(rank),"type":"INT64"},\
        "title":{"value":"\(title)","type":"STRING"},\
        "where":{"value":{"latitude":\(latitude),"longitude":\(longitude)},"type":"LOCATION"}}}}
        """
    }

    /// A `records/modify` body creating records `range` in the default zone.
    static func modifyBody(_ range: Range<Int>) -> String {
        "{\"operations\":[" + range.map { BenchRecord($0).createOperation }.joined(separator: ",") + "],\"zoneID\":{\"zoneName\":\"_defaultZone\"}}"
    }

    /// The equality query: `cat == category`, sorted by `rank`, `limit` results.
    static func equalityQuery(category: String, limit: Int) -> String {
        """
        {"query":{"recordType":"Item","filterBy":[{"fieldName":"cat","comparator":"EQUALS","fieldValue":{"value":"\(category)","type":"STRING"}}],\
        "sortBy":[{"fieldName":"rank","ascending":true}]},"resultsLimit":\(limit),"zoneID":{"zoneName":"_defaultZone"}}
        """
    }

    /// The NEAR query: `where` within `distance` metres of the centre, sorted by distance.
    static func nearQuery(latitude: Double, longitude: Double, distance: Double, limit: Int) -> String {
        """
        {"query":{"recordType":"Item","filterBy":[{"fieldName":"where","comparator":"NEAR","distance":\(distance),\
        "fieldValue":{"value":{"latitude":\(latitude),"longitude":\(longitude)},"type":"LOCATION"}}],\
        "sortBy":[{"fieldName":"where","relativeLocation":{"latitude":\(latitude),"longitude":\(longitude)}}]},\
        "resultsLimit":\(limit),"zoneID":{"zoneName":"_defaultZone"}}
        """
    }
}
