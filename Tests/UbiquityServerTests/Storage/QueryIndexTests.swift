// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
@testable import UbiquityServer
import UbiquityWire

/// Query indexes: the key encoding orders as queries do, and a query answered from an index gives
/// exactly the pages the scan gives, on every store, through writes made after the index was built.
@Suite struct QueryIndexTests {
    /// A small deterministic generator (SplitMix64), so a failure names its seed.
    struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
        mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    }

    static let words = ["", "a", "a\u{0}b", "ab", "Apple", "apple", "b", "é", "e\u{301}x", "zz", "日本", "\u{1F600}"]

    static func randomValue(_ generator: inout Generator) -> WireFieldValue {
        switch generator.below(5) {
        case 0: return .int64(Int64(generator.below(7)) - 3)
        case 1: return .int64([Int64.min, Int64.max, 9_007_199_254_740_993, -1][generator.below(4)])
        case 2: return .double([-2.5, -0.0, 0.0, 0.5, 3.0, 1e300, -1e-300][generator.below(7)])
        case 3: return .timestamp(Double(generator.below(5)) * 1000.5)
        default: return .string(words[generator.below(words.count)])
        }
    }

    @Test func keysOrderAsQueriesCompare() {
        var generator = Generator(state: 26)
        for _ in 0..<20_000 {
            let a = Self.randomValue(&generator), b = Self.randomValue(&generator)
            guard let order = RecordFilter.compare(a, b) else { continue }
            // numbers of different kinds past 2^53 compare as doubles; the key keeps the integer's order
            if case .int64(let x) = a, abs(Double(x)) >= RecordIndexEntry.exactNumberLimit, !(b.isInt64) { continue }
            if case .int64(let x) = b, abs(Double(x)) >= RecordIndexEntry.exactNumberLimit, !(a.isInt64) { continue }
            for descending in [false, true] {
                let ka = QueryIndexKey.encoded(a, descending: descending), kb = QueryIndexKey.encoded(b, descending: descending)
                let keyOrder = ka == kb ? 0 : (ka.lexicographicallyPrecedes(kb) ? -1 : 1)
                #expect(keyOrder == (descending ? -order : order), "\(a) vs \(b), descending \(descending)")
                // missing values come last either way
                #expect(ka.lexicographicallyPrecedes(QueryIndexKey.encoded(nil, descending: descending)))
            }
        }
    }

    @Test func definitionsRoundTripAsText() {
        let definition = QueryIndexDefinition(recordType: "Item", components: [
            .init(.field("rank"), .descending), .init(.field("cat"), .equal), .init(.system(.createdUserRecordName), .equal),
            .init(.system(.modifiedTimestamp), .ascending),
        ])
        #expect(definition.text == "=___createdBy,=cat,-rank,+___modTime")
        #expect(QueryIndexDefinition(recordType: "Item", text: definition.text) == definition)
        #expect(QueryIndexDefinition(recordType: "Item", text: "") == QueryIndexDefinition(recordType: "Item", components: []))
        #expect(QueryIndexDefinition(recordType: "Item", text: "cat") == nil)
    }

    // MARK: Index against scan

    static let key = DatabaseKey(container: "iCloud.query.index", environment: .development, scope: .private, owner: "_owner")
    static let fields: [String: SchemaField] = [
        "cat": SchemaField(name: "cat", type: "STRING", queryable: true, sortable: true, searchable: true),
        "rank": SchemaField(name: "rank", type: "INT64", queryable: true, sortable: true, searchable: false),
        "score": SchemaField(name: "score", type: "DOUBLE", queryable: true, sortable: true, searchable: false),
        "title": SchemaField(name: "title", type: "STRING", queryable: true, sortable: true, searchable: true),
        "tags": SchemaField(name: "tags", type: "STRING_LIST", queryable: true, sortable: true, searchable: true),
        "owner": SchemaField(name: "owner", type: "REFERENCE", queryable: true, sortable: true, searchable: false),
    ]
    static let type = RecordTypeSchema(name: "Item", fields: fields)

    static func randomRecord(_ generator: inout Generator, zone: Int64, name: String, sequence: Int64) -> StoredRecord {
        var fields: [String: WireFieldValue] = [:]
        if generator.chance(90) { fields["cat"] = .string(["red", "green", "blue", "Blue"][generator.below(4)]) }
        if generator.chance(85) { fields["rank"] = .int64(Int64(generator.below(12)) - 2) }
        if generator.chance(80) { fields["score"] = .double([-1.5, 0, 0.25, 2, 2.5][generator.below(5)]) }
        if generator.chance(85) { fields["title"] = .string(words.filter { !$0.contains("\u{0}") }[generator.below(words.count - 1)] + "\(generator.below(3))") }
        if generator.chance(70) { fields["tags"] = .list(element: .string, (0..<generator.below(3)).map { _ in .string(["x", "y", "z"][generator.below(3)]) }) }
        if generator.chance(60) { fields["owner"] = .reference(WireReference(recordName: "user-\(generator.below(3))")) }
        return StoredRecord(zone: zone, recordName: name, recordType: "Item", changeTag: "t\(sequence)", sequence: sequence, deleted: false,
                            fields: fields, created: WireRecordStamp(timestamp: Int64(generator.below(5)) * 1000, userRecordName: "_u\(generator.below(2))", deviceID: nil),
                            modified: WireRecordStamp(timestamp: 9_000 + sequence, userRecordName: "_owner", deviceID: nil))
    }

    static func randomQuery(_ generator: inout Generator) -> WireQuery {
        let sortKeys: [WireFieldKey] = [.field("rank"), .field("score"), .field("title"), .field("tags"), .field("owner"),
                                        .system(.createdTimestamp), .system(.recordName), .field("cat")]
        var sorts: [WireSort] = []
        for _ in 0..<generator.below(3) {
            let key = sortKeys[generator.below(sortKeys.count)]
            if !sorts.contains(where: { $0.key == key }) { sorts.append(WireSort(key: key, ascending: generator.chance(50))) }
        }
        var filters: [WireFilter] = []
        if generator.chance(70) { filters.append(WireFilter(comparator: .equals, key: .field("cat"), fieldValue: .string(["red", "green", "blue", "none"][generator.below(4)]))) }
        if generator.chance(30) { filters.append(WireFilter(comparator: .equals, key: .field("rank"), fieldValue: generator.chance(50) ? .int64(Int64(generator.below(5))) : .double(2))) }
        if generator.chance(20) { filters.append(WireFilter(comparator: .equals, key: .field("owner"), fieldValue: .reference(WireReference(recordName: "user-\(generator.below(3))")))) }
        if generator.chance(15) { filters.append(WireFilter(comparator: .equals, key: .system(.createdUserRecordName), fieldValue: .reference(WireReference(recordName: "_u1")))) }
        if let first = sorts.first, generator.chance(60) {
            let comparators: [WireComparator] = [.lessThan, .lessThanOrEquals, .greaterThan, .greaterThanOrEquals]
            let value: WireFieldValue
            switch first.key {
            case .field("title"), .field("cat"), .system(.recordName): value = .string(["a", "b", "e", "r"][generator.below(4)])
            case .field("tags"), .field("owner"): value = .string("y")
            default: value = generator.chance(50) ? .int64(Int64(generator.below(8)) - 1) : .double(1.5)
            }
            for _ in 0...generator.below(2) {
                filters.append(WireFilter(comparator: comparators[generator.below(4)], key: first.key, fieldValue: value))
            }
        }
        if generator.chance(20) { filters.append(WireFilter(comparator: .notEquals, key: .field("score"), fieldValue: .double(0))) }
        if generator.chance(15) { filters.append(WireFilter(comparator: .beginsWith, key: .field("title"), fieldValue: .string("a"))) }
        if generator.chance(15) { filters.append(WireFilter(comparator: .listContains, key: .field("tags"), fieldValue: .string("x"))) }
        return WireQuery(recordType: "Item", filterBy: filters, sortBy: sorts)
    }

    /// Every page of `query` (names), following positions, by the index (`index`) or the scan.
    static func pages(_ store: any RecordStore, zone: StoredZone, query: WireQuery, limit: Int, index: StoredQueryIndex?) async throws -> [[String]] {
        var pages: [[String]] = []
        var start = QueryStart.first
        while pages.count < 100 {
            let begin = start
            let (names, next) = try await store.read { tx -> ([String], QueryPosition?) in
                if let index, let plan = QueryIndexPlan(query: query, fields: fields) {
                    let (page, next) = try #require(try await RecordsEngine.indexedPage(tx, index: index, plan: plan, zone: zone, type: type, query: query,
                                                                                         start: begin, limit: limit))
                    return (page.map { $0.record.recordName }, next)
                }
                let (page, next) = try await RecordsEngine.scannedPage(tx, type: type, zones: [zone], query: query, conditions: [], start: begin, limit: limit)
                return (page.map { $0.record.recordName }, next)
            }
            if let index, let plan = QueryIndexPlan(query: query, fields: fields) {
                // read in one statement outside a snapshot, the page is the same or not given
                let single = try await store.readWithoutSnapshot { tx in
                    try await RecordsEngine.indexedPage(tx, index: index, plan: plan, zone: zone, type: type, query: query, start: begin, limit: limit,
                                                        oneStatement: true)
                }
                if let single { #expect(single.page.map(\.record.recordName) == names && single.next == next) }
            }
            pages.append(names)
            guard let next else { break }
            // through the marker's text, as a client sends it back
            start = .after(try #require(QueryPosition(encoded: next.encoded, count: query.sortBy.count)))
        }
        return pages
    }

    @Test(arguments: StoreKind.available)
    func indexedPagesEqualScannedPages(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            let seed: UInt64 = 2026
            var generator = Generator(state: seed)
            let zone = try await store.write { tx in
                let database = try await tx.lockDatabase(Self.key)
                try await tx.schemas().addToSchema(Self.type, container: Self.key.container, environment: .development)
                return try await tx.createZone(database: database.id, name: "zone", createdAt: 1)
            }
            var sequence: Int64 = 0
            func write(_ names: [String]) async throws {
                var records: [StoredRecord] = []
                for name in Set(names).sorted() {
                    sequence += 1
                    records.append(Self.randomRecord(&generator, zone: zone.id, name: name, sequence: sequence))
                }
                let batch = records
                try await store.write { tx in
                    _ = try await tx.lockDatabase(Self.key)
                    let existing = try await tx.records(zone: zone.id, names: batch.map(\.recordName))
                    try await tx.putRecords(batch.map { RecordWrite(record: $0, fieldsJSON: $0.fieldsJSON) }, zoneName: zone.name, replacing: Set(existing.keys))
                }
            }
            try await write((0..<140).map { "r\($0)" })
            var checked = 0
            for round in 0..<3 {
                for _ in 0..<30 {
                    let query = Self.randomQuery(&generator)
                    guard let plan = QueryIndexPlan(query: query, fields: Self.fields) else { continue }
                    let index = try await store.write { tx in
                        try await tx.queryIndexStore().addQueryIndex(container: Self.key.container, environment: .development, definition: plan.definition).index
                    }
                    try await QueryIndexBuilder.build(index, store: store)
                    let limit = 1 + generator.below(9)
                    let scanned = try await Self.pages(store, zone: zone, query: query, limit: limit, index: nil)
                    let indexed = try await Self.pages(store, zone: zone, query: query, limit: limit, index: index)
                    #expect(indexed == scanned, "seed \(seed) round \(round): \(query) limit \(limit), index \(plan.definition)")
                    checked += 1
                }
                // writes after the indexes were built: updates, new records, deletions
                try await write((0..<60).map { _ in "r\(generator.below(200))" })
                let doomed = (0..<20).map { _ in "r\(generator.below(200))" }
                try await store.write { tx in
                    _ = try await tx.lockDatabase(Self.key)
                    for record in try await tx.records(zone: zone.id, names: doomed).values where !record.deleted {
                        var tombstone = record
                        tombstone.deleted = true
                        tombstone.fields = [:]
                        try await tx.putRecord(tombstone)
                    }
                }
            }
            #expect(checked > 45)
        }
    }

    @Test(arguments: StoreKind.available)
    func droppedIndexesLoseTheirKeysAndZonesTheirs(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            var generator = Generator(state: 7)
            let made = (0..<30).map { Self.randomRecord(&generator, zone: 0, name: "r\($0)", sequence: Int64($0 + 1)) }
            let definition = QueryIndexDefinition(recordType: "Item", components: [.init(.field("cat"), .equal), .init(.field("rank"), .ascending)])
            let (zone, index) = try await store.write { tx in
                let database = try await tx.lockDatabase(Self.key)
                let zone = try await tx.createZone(database: database.id, name: "zone", createdAt: 1)
                let index = try await tx.queryIndexStore().addQueryIndex(container: Self.key.container, environment: .development, definition: definition)
                #expect(index.added)
                await #expect(try !tx.queryIndexStore().addQueryIndex(container: Self.key.container, environment: .development, definition: definition).added)
                let records = made.map { record in
                    var record = record
                    record.zone = zone.id
                    return record
                }
                try await tx.putRecords(records.map { RecordWrite(record: $0, fieldsJSON: $0.fieldsJSON) }, zoneName: zone.name, replacing: [])
                return (zone, index.index)
            }
            // a scan outside a transaction: nothing unless the index is ready as the statement runs
            @Sendable func scan() async throws -> [QueryIndexHit] {
                try await store.readWithoutSnapshot { tx in try await tx.queryIndexStore().scanQueryIndex(id: index.id, zone: zone.id, from: [], to: [0xFF], limit: 100) }
            }
            // written by the writes themselves, before any build
            #expect(try await store.read { tx in try await tx.queryIndexStore().queryIndexKeyCount(id: index.id) } == 30)
            #expect(try await scan().isEmpty)
            #expect(try await QueryIndexBuilder.build(index, store: store) == 30)
            #expect(try await store.read { tx in try await tx.queryIndexStore().queryIndexes(container: Self.key.container, environment: .development) }.map(\.ready) == [true])
            let keys = try await scan().map(\.key)
            #expect(keys.count == 30 && keys == keys.sorted { $0.lexicographicallyPrecedes($1) })
            try await store.write { tx in
                _ = try await tx.lockDatabase(Self.key)
                try await tx.deleteZone(id: zone.id)
            }
            #expect(try await store.read { tx in try await tx.queryIndexStore().queryIndexKeyCount(id: index.id) } == 0)
            try await store.write { tx in try await tx.queryIndexStore().dropQueryIndex(id: index.id) }
            #expect(try await store.read { tx in try await tx.queryIndexStore().queryIndexes(container: Self.key.container, environment: .development) }.isEmpty)
            #expect(try await scan().isEmpty)
        }
    }
}

extension QueryIndexTests {
    @Test(arguments: StoreKind.available)
    func developmentAddsAtMostTheLimitPerTypeAndFinishesHalfBuiltIndexes(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            try await store.write { tx in try await tx.addContainer(Self.key.container, createdAt: 1) }
            let builder = QueryIndexBuilder(store: store, logger: StoreFixture.logger)
            let shapes = (0...QueryIndexBuilder.automaticLimit).map {
                QueryIndexDefinition(recordType: "Item", components: [.init(.field("f\($0)"), .equal), .init(.field("rank"), .ascending)])
            }
            for shape in shapes {
                await builder.request(shape, container: Self.key.container, environment: .development)
                await builder.idle()
            }
            await builder.request(shapes[shapes.count - 1], container: Self.key.container, environment: .development)
            await builder.idle()
            let indexes = try await store.read { tx in try await tx.queryIndexStore().queryIndexes(container: Self.key.container, environment: .development) }
            #expect(indexes.count == QueryIndexBuilder.automaticLimit)
            #expect(indexes.allSatisfy { $0.ready })
            #expect(!indexes.contains { $0.definition == shapes[shapes.count - 1] })
            // an index left half-built (a stop during its build) is finished at the next start
            let unfinished = QueryIndexDefinition(recordType: "Half", components: [.init(.field("rank"), .descending)])
            try await store.write { tx in
                let database = try await tx.lockDatabase(Self.key)
                let zone = try await tx.createZone(database: database.id, name: "zone", createdAt: 1)
                let records = (0..<5).map { StoredRecord(zone: zone.id, recordName: "h\($0)", recordType: "Half", changeTag: "t", sequence: Int64($0 + 1),
                                                         deleted: false, fields: ["rank": .int64(Int64($0))], created: WireRecordStamp(timestamp: 1, userRecordName: "_u", deviceID: nil),
                                                         modified: WireRecordStamp(timestamp: 1, userRecordName: "_u", deviceID: nil)) }
                try await tx.putRecords(records.map { RecordWrite(record: $0, fieldsJSON: $0.fieldsJSON) }, zoneName: zone.name, replacing: [])
                _ = try await tx.queryIndexStore().addQueryIndex(container: Self.key.container, environment: .development, definition: unfinished)
            }
            await builder.resumeUnfinished()
            await builder.idle()
            let half = try await store.read { tx in
                try await tx.queryIndexStore().queryIndexes(container: Self.key.container, environment: .development).first { $0.definition == unfinished }
            }
            #expect(half?.ready == true)
            // another type has its own allowance
            await builder.request(QueryIndexDefinition(recordType: "Other", components: []), container: Self.key.container, environment: .development)
            await builder.idle()
            #expect(try await store.read { tx in try await tx.queryIndexStore().queryIndexes(container: Self.key.container, environment: .development) }.count
                    == QueryIndexBuilder.automaticLimit + 2)
        }
    }
}

extension WireFieldValue {
    fileprivate var isInt64: Bool { if case .int64 = self { return true } else { return false } }
}
