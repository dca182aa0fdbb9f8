// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Foundation
import GRDB
import NIOCore
import UbiquityCore
import UbiquityWire

/// The records server's figures (`scripts/bench-records` runs them against a release `ubiq
/// serve`): `records-load` (records/modify throughput from concurrent clients), `records-query`
/// (query latency, one request at a time), `records-baseline` (the same rows straight into a
/// plain GRDB table) and `records-sql` (the same rows as SQL for `psql`). Each prints one line of
/// `key=value` pairs.
enum RecordsBench {
    /// The endpoint of one operation, with the tokens in the query string.
    struct Endpoint: Sendable {
        var base: String
        var apiToken: String
        var webToken: String
        var container: String
        /// `private` (the user's; the default) or `public`.
        var database: String

        init(_ options: Options) {
            base = options.string("url")
            apiToken = options.string("api")
            webToken = options.string("web")
            container = options.string("container", "iCloud.bench")
            database = options.string("database", "private")
        }

        func url(_ operation: String) -> String {
            "\(base)/database/1/\(container)/development/\(database)/\(operation)?ckAPIToken=\(apiToken)&ckWebAuthToken=\(webToken)"
        }
    }

    /// One POST: status, body and nanoseconds from sending to the last byte of the reply.
    static func post(_ client: HTTPClient, _ url: String, _ body: String) async throws -> (status: UInt, body: ByteBuffer, nanoseconds: UInt64) {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: body))
        let start = monotonicNanoseconds()
        let response = try await client.execute(request, timeout: .seconds(300))
        let reply = try await response.body.collect(upTo: 256 << 20)
        return (response.status.code, reply, monotonicNanoseconds() - start)
    }

    /// A client with its own connection pool (so its own connection).
    static func makeClient() -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(600), concurrentHTTP1ConnectionsPerHostSoftLimit: 1)
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    // MARK: records/modify throughput

    /// `records-load --url U --api T --web W --records N [--start S] [--batch 200] [--clients 4]`:
    /// creates records S..<S+N through `records/modify`, `batch` per request, from `clients`
    /// concurrent clients (each its own HTTP connection, one request at a time; client k sends
    /// batches k, k+clients, …). Prints records/s over the wall time of the whole load.
    static func load(_ options: Options) throws {
        let endpoint = Endpoint(options)
        let count = options.int("records", 100_000), start = options.int("start", 0)
        let batch = options.int("batch", 200), clients = options.int("clients", 4)
        let batches = (count + batch - 1) / batch
        let url = endpoint.url("records/modify")
        let outcome = LoadOutcome()
        try QueryBench.block {
            let began = monotonicNanoseconds()
            try await withThrowingTaskGroup(of: (Samples, Int, Int).self) { group in
                for client in 0..<clients {
                    group.addTask {
                        let http = makeClient()
                        var samples = Samples()
                        var saved = 0, failed = 0
                        do {
                            var index = client
                            while index < batches {
                                let lower = start + index * batch, upper = min(start + count, lower + batch)
                                let body = BenchRecord.modifyBody(lower..<upper)
                                let reply = try await post(http, url, body)
                                samples.add(reply.nanoseconds)
                                if reply.status == 200 {
                                    let errors = countOccurrences(of: "serverErrorCode", in: reply.body)
                                    saved += upper - lower - errors
                                    failed += errors
                                    if errors > 0, failed == errors {
                                        FileHandle.standardError.write(Data("records-load: item errors, e.g. \(String(buffer: reply.body).prefix(400))\n".utf8))
                                    }
                                } else {
                                    failed += upper - lower
                                    FileHandle.standardError.write(Data("records-load: HTTP \(reply.status): \(String(buffer: reply.body).prefix(400))\n".utf8))
                                }
                                index += clients
                            }
                        } catch {
                            try? await http.shutdown()
                            throw error
                        }
                        try await http.shutdown()
                        return (samples, saved, failed)
                    }
                }
                for try await (samples, saved, failed) in group {
                    outcome.add(samples, saved: saved, failed: failed)
                }
            }
            outcome.elapsed = monotonicNanoseconds() - began
        }
        let seconds = Double(outcome.elapsed) / 1e9
        print(String(format: "records-load records=%d saved=%d failed=%d clients=%d batch=%d seconds=%.3f rate=%.1f request_p50_ms=%.1f request_p99_ms=%.1f",
                     count, outcome.saved, outcome.failed, clients, batch, seconds, Double(outcome.saved) / seconds,
                     outcome.samples.percentile(0.5) / 1000, outcome.samples.percentile(0.99) / 1000))
    }

    /// What the clients of `load` found. `@unchecked Sendable`: written by the task group's
    /// consumer only, read after `block` returns.
    final class LoadOutcome: @unchecked Sendable {
        var samples = Samples()
        var saved = 0
        var failed = 0
        var elapsed: UInt64 = 0
        func add(_ more: Samples, saved: Int, failed: Int) {
            samples.values += more.values
            self.saved += saved
            self.failed += failed
        }
    }

    static func countOccurrences(of needle: String, in buffer: ByteBuffer) -> Int {
        let pattern = Array(needle.utf8)
        return buffer.withUnsafeReadableBytes { bytes in
            guard bytes.count >= pattern.count else { return 0 }
            var found = 0, index = 0
            while index <= bytes.count - pattern.count {
                if bytes[index] == pattern[0], (1..<pattern.count).allSatisfy({ bytes[index + $0] == pattern[$0] }) {
                    found += 1
                    index += pattern.count
                } else {
                    index += 1
                }
            }
            return found
        }
    }

    // MARK: records/query latency

    /// `records-query --url U --api T --web W --kind equality|near [--requests 300] [--warmup 30]
    /// [--limit 100] [--distance 5000] [--seed 1]`: one request at a time on one connection;
    /// equality: `cat == cK` (K random of 100) sorted by `rank`; near: `where` within `distance`
    /// metres of a random centre well inside the region, sorted by distance. Prints p50/p99 in ms
    /// and the mean number of records returned.
    static func query(_ options: Options) throws {
        let endpoint = Endpoint(options)
        let kind = options.string("kind", "equality")
        let requests = options.int("requests", 300), warmup = options.int("warmup", 30), limit = options.int("limit", 100)
        let distance = Double(options.int("distance", 5000))
        let seed = UInt64(options.int("seed", 1))
        let url = endpoint.url("records/query")
        let outcome = LoadOutcome()
        let bodies = queryParameters(kind: kind, count: warmup + requests, seed: seed).map { parameter in
            switch parameter {
            case .category(let category): BenchRecord.equalityQuery(category: category, limit: limit)
            case .centre(let latitude, let longitude): BenchRecord.nearQuery(latitude: latitude, longitude: longitude, distance: distance, limit: limit)
            }
        }
        let counts = Counts()
        try QueryBench.block {
            let http = makeClient()
            do {
                var samples = Samples()
                for (index, body) in bodies.enumerated() {
                    let reply = try await post(http, url, body)
                    guard reply.status == 200 else {
                        throw UbiquityError(.io, "records/query answered \(reply.status): \(String(buffer: reply.body).prefix(400))")
                    }
                    guard index >= warmup else { continue }
                    samples.add(reply.nanoseconds)
                    let json = try JSONValue.parse(Data(reply.body.readableBytesView))
                    let records = json.objectValue?["records"]?.arrayValue?.count ?? 0
                    counts.returned += records
                    if json.objectValue?["continuationMarker"] != nil { counts.truncated += 1 }
                }
                outcome.add(samples, saved: 0, failed: 0)
            } catch {
                try? await http.shutdown()
                throw error
            }
            try await http.shutdown()
        }
        print(String(format: "records-query kind=%@ requests=%d p50_ms=%.2f p99_ms=%.2f max_ms=%.2f mean_returned=%.1f with_more=%d",
                     kind, requests, outcome.samples.percentile(0.5) / 1000, outcome.samples.percentile(0.99) / 1000,
                     outcome.samples.percentile(1.0) / 1000, Double(counts.returned) / Double(max(requests, 1)), counts.truncated))
    }

    /// What one query asks: a category (equality) or a centre (NEAR).
    enum QueryParameter {
        case category(String)
        case centre(latitude: Double, longitude: Double)
    }

    /// The parameters of `count` queries of `kind`, the same for the server and the baseline.
    /// NEAR centres lie at least 0.2° inside the region's edges, so the whole circle is inside.
    static func queryParameters(kind: String, count: Int, seed: UInt64) -> [QueryParameter] {
        var generator = SeededRandom(seed: seed)
        return (0..<count).map { _ in
            if kind == "near" {
                let u = Double(generator.next() >> 11) / Double(1 << 53), v = Double(generator.next() >> 11) / Double(1 << 53)
                let latitude = ((BenchRecord.minLatitude + 0.2 + u * (BenchRecord.maxLatitude - BenchRecord.minLatitude - 0.4)) * 1e4).rounded() / 1e4
                let longitude = ((BenchRecord.minLongitude + 0.2 + v * (BenchRecord.maxLongitude - BenchRecord.minLongitude - 0.4)) * 1e4).rounded() / 1e4
                return .centre(latitude: latitude, longitude: longitude)
            }
            return .category("c\(generator.next() % UInt64(BenchRecord.categories))")
        }
    }

    /// Result counts of `query`. `@unchecked Sendable`: one task writes, `query` reads after.
    final class Counts: @unchecked Sendable {
        var returned = 0
        var truncated = 0
    }

    // MARK: Baselines

    /// `records-baseline --rows N [--batch 200] [--file PATH]`: the embedded limit. Inserts
    /// records 0..<N into a fresh SQLite file through GRDB in this one process: a plain table
    /// `items(id INTEGER PRIMARY KEY, name TEXT NOT NULL, cat TEXT NOT NULL, rank INTEGER NOT NULL,
    /// title TEXT NOT NULL, latitude REAL NOT NULL, longitude REAL NOT NULL)` with one index
    /// `(cat, rank)`, WAL and `synchronous = NORMAL` (the server's settings), one `pool.write`
    /// transaction per `batch` rows executing one cached prepared INSERT per row. Row values are
    /// built inside the timed loop (as the server decodes them), from the same generator.
    static func baseline(_ options: Options) throws {
        let rows = options.int("rows", 100_000), batch = options.int("batch", 200)
        let path = options.string("file", NSTemporaryDirectory() + "ubiq-records-baseline-\(getpid()).sqlite")
        for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
        defer { if !options.flag("keep") { for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) } } }
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        let pool = try DatabasePool(path: path, configuration: configuration)
        try pool.write { db in
            try db.execute(sql: """
                CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, cat TEXT NOT NULL, rank INTEGER NOT NULL,
                                    title TEXT NOT NULL, latitude REAL NOT NULL, longitude REAL NOT NULL);
                CREATE INDEX items_cat_rank ON items(cat, rank);
                """)
        }
        let began = monotonicNanoseconds()
        var lower = 0
        while lower < rows {
            let upper = min(rows, lower + batch)
            try pool.write { db in
                let insert = try db.cachedStatement(sql: "INSERT INTO items (name, cat, rank, title, latitude, longitude) VALUES (?, ?, ?, ?, ?, ?)")
                for index in lower..<upper {
                    let record = BenchRecord(index)
                    try insert.execute(arguments: [record.name, record.category, record.rank, record.title, record.latitude, record.longitude])
                }
            }
            lower = upper
        }
        let seconds = Double(monotonicNanoseconds() - began) / 1e9
        try pool.close()
        print(String(format: "records-baseline rows=%d batch=%d seconds=%.3f rate=%.1f", rows, batch, seconds, Double(rows) / seconds))
    }

    /// `records-baseline-query --file PATH --kind equality|near [--requests 300] [--warmup 30]
    /// [--limit 100] [--distance 5000] [--seed 1]`: the same queries as `records-query`, straight
    /// on the baseline's table (kept with `records-baseline --keep`) through GRDB in this process,
    /// each row read into a value. Equality: `WHERE cat = ? ORDER BY rank LIMIT ?` (the `(cat, rank)`
    /// index answers it). NEAR: an index on `latitude` is added first (not timed), then the
    /// bounding box `latitude BETWEEN … AND longitude BETWEEN …`, the exact great-circle distance
    /// checked and sorted in Swift, the first `limit` kept.
    static func baselineQuery(_ options: Options) throws {
        let path = options.string("file")
        let kind = options.string("kind", "equality")
        let requests = options.int("requests", 300), warmup = options.int("warmup", 30), limit = options.int("limit", 100)
        let distance = Double(options.int("distance", 5000))
        let parameters = queryParameters(kind: kind, count: warmup + requests, seed: UInt64(options.int("seed", 1)))
        let pool = try DatabasePool(path: path)
        if kind == "near" {
            try pool.write { db in try db.execute(sql: "CREATE INDEX IF NOT EXISTS items_latitude ON items(latitude)") }
        }
        var samples = Samples()
        var returned = 0
        for (index, parameter) in parameters.enumerated() {
            let start = monotonicNanoseconds()
            let found: [BenchRecord] = try pool.read { db in
                switch parameter {
                case .category(let category):
                    return try Row.fetchAll(db.cachedStatement(sql: "SELECT name, cat, rank, title, latitude, longitude FROM items WHERE cat = ? ORDER BY rank LIMIT ?"),
                                            arguments: [category, limit]).map(BenchRecord.init(row:))
                case .centre(let latitude, let longitude):
                    let latitudeSpan = (distance * 1.01 + 1) / 110_574
                    let longitudeSpan = latitudeSpan / cos((abs(latitude) + latitudeSpan) * .pi / 180)
                    let rows = try Row.fetchAll(db.cachedStatement(sql: """
                        SELECT name, cat, rank, title, latitude, longitude FROM items
                        WHERE latitude BETWEEN ? AND ? AND longitude BETWEEN ? AND ?
                        """), arguments: [latitude - latitudeSpan, latitude + latitudeSpan, longitude - longitudeSpan, longitude + longitudeSpan])
                    return rows.map(BenchRecord.init(row:))
                        .map { ($0, greatCircle($0.latitude, $0.longitude, latitude, longitude)) }
                        .filter { $0.1 <= distance }
                        .sorted { $0.1 < $1.1 }
                        .prefix(limit).map(\.0)
                }
            }
            let elapsed = monotonicNanoseconds() - start
            if index >= warmup {
                samples.add(elapsed)
                returned += found.count
            }
        }
        try pool.close()
        print(String(format: "records-baseline-query kind=%@ requests=%d p50_ms=%.3f p99_ms=%.3f max_ms=%.3f mean_returned=%.1f",
                     kind, requests, samples.percentile(0.5) / 1000, samples.percentile(0.99) / 1000, samples.percentile(1.0) / 1000,
                     Double(returned) / Double(max(requests, 1))))
    }

    /// Haversine distance in metres (the radius `WireLocation.distance(to:)` uses).
    static func greatCircle(_ latitude1: Double, _ longitude1: Double, _ latitude2: Double, _ longitude2: Double) -> Double {
        let radians = Double.pi / 180
        let dLatitude = (latitude2 - latitude1) * radians, dLongitude = (longitude2 - longitude1) * radians
        let a = sin(dLatitude / 2) * sin(dLatitude / 2) + cos(latitude1 * radians) * cos(latitude2 * radians) * sin(dLongitude / 2) * sin(dLongitude / 2)
        return 2 * 6_371_008.8 * asin(min(1, sqrt(a)))
    }

    /// `records-sql --rows N [--batch 200] [--multi]`: the PostgreSQL baseline's input for
    /// `psql -f`: a fresh table `bench.bench_items` like the GRDB baseline's (index on `(cat, rank)`),
    /// then per `batch` rows `BEGIN;` + one INSERT per row (or one multi-row INSERT with
    /// `--multi`) + `COMMIT;`.
    static func sql(_ options: Options) {
        let rows = options.int("rows", 100_000), batch = options.int("batch", 200), multi = options.flag("multi")
        var out = """
            CREATE SCHEMA IF NOT EXISTS bench;
            DROP TABLE IF EXISTS bench.bench_items;
            CREATE TABLE bench.bench_items (id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL, cat TEXT NOT NULL, rank BIGINT NOT NULL,
                                      title TEXT NOT NULL, latitude DOUBLE PRECISION NOT NULL, longitude DOUBLE PRECISION NOT NULL);
            CREATE INDEX bench_items_cat_rank ON bench.bench_items(cat, rank);

            """
        func values(_ index: Int) -> String {
            let record = BenchRecord(index)
            return "('\(record.name)','\(record.category)',\(record.rank),'\(record.title)',\(record.latitude),\(record.longitude))"
        }
        var lower = 0
        while lower < rows {
            let upper = min(rows, lower + batch)
            out += "BEGIN;\n"
            if multi {
                out += "INSERT INTO bench.bench_items (name, cat, rank, title, latitude, longitude) VALUES "
                out += (lower..<upper).map(values).joined(separator: ",") + ";\n"
            } else {
                for index in lower..<upper {
                    out += "INSERT INTO bench.bench_items (name, cat, rank, title, latitude, longitude) VALUES \(values(index));\n"
                }
            }
            out += "COMMIT;\n"
            lower = upper
            if out.utf8.count > 1 << 20 {
                FileHandle.standardOutput.write(Data(out.utf8))
                out = ""
            }
        }
        FileHandle.standardOutput.write(Data(out.utf8))
    }
}
