// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import NIOCore
import Testing
import UbiquityCore
import UbiquityServer
import UbiquityTestSupport

/// Two `ubiq serve` processes on one PostgreSQL and one S3 bucket (issue 28, item 3), with a
/// device signed in to each: real servers, daemons, PostgreSQL and S3 server (moto), as
/// `scripts/test` starts them.
@Suite(.enabled(if: SharedStore.postgresURL != nil && SharedStore.s3URL != nil, "needs UBIQUITY_TEST_POSTGRES_URL and UBIQUITY_TEST_S3_URL"))
struct ServersAsOneTests {
    /// The `--database … --blobs s3://…` arguments of a fresh schema and a fresh bucket, and
    /// the bucket's client.
    static func sharedStore(in folder: URL) async throws -> (arguments: [String], bucket: S3Client) {
        let suffix = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        var logger = Logger(label: "test.s3")
        logger.logLevel = .critical
        let location = try S3Location(endpoint: URL(string: SharedStore.s3URL!)!, bucket: "ubiq-servers-\(suffix)", prefix: "blobs/")
        let client = S3Client(location: location, credentials: .init(accessKeyID: "test", secretAccessKey: "test"), logger: logger)
        try await client.createBucket()
        let credentials = folder.appendingPathComponent("s3-credentials")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try "[default]\naws_access_key_id = test\naws_secret_access_key = test\n".write(to: credentials, atomically: true, encoding: .utf8)
        return (["--database", SharedStore.postgresURL!, "--schema", "t_\(suffix)", "--blobs", location.url, "--s3-endpoint", SharedStore.s3URL!,
                 "--s3-credentials", credentials.path], client)
    }

    @Test("devices signed in to two servers on one PostgreSQL and one bucket sync both ways, by push; assets cross; a server killed mid-upload loses nothing")
    func twoServersActAsOne() async throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("ubiquity-servers-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let (store, bucket) = try await Self.sharedStore(in: scratch)
        let one = try SyncRig.Cloud(store: store)
        let two = try one.sibling()
        // a backstop of an hour: a change that arrives in time arrived by push (across servers)
        let a = SyncRig.SyncDevice("a", one, extra: ["--sync-poll-interval", "3600"])
        let b = SyncRig.SyncDevice("b", two, extra: ["--sync-poll-interval", "3600"])
        try a.start()
        defer { a.stop() }
        try b.start()
        defer { b.stop() }

        // a small document each way, and an asset of several packs from A through server 1 to B through server 2
        try a.write("from-a.txt", "written on a, through server 1")
        let big = SyncRig.content("big", size: 9 << 20)
        try big.write(to: a.url("big.bin"))
        #expect(SyncRig.eventually("b has a's files") { b.read("from-a.txt") == "written on a, through server 1" && (try? Data(contentsOf: b.url("big.bin"))) == big })
        try b.write("from-b.txt", "written on b, through server 2")
        #expect(SyncRig.eventually("a has b's file") { a.read("from-b.txt") == "written on b, through server 2" })
        #expect(try await !bucket.list(prefix: "packs/").isEmpty, "the content is in the bucket, in packs")

        // server 1 is killed while it writes A's large file into the bucket (a pack's multipart
        // upload has begun); A retries until it is back
        let large = SyncRig.content("large", size: 40 << 20)
        try large.write(to: a.url("large.bin"))
        #expect(await SyncRig.eventuallyAsync("server 1 is writing a pack") { try await !bucket.pendingUploads(prefix: "packs/").isEmpty })
        one.kill9()
        try await Task.sleep(for: .seconds(1))
        try one.restart()
        #expect(SyncRig.eventually("b has the large file whole", seconds: 240) { (try? Data(contentsOf: b.url("large.bin"))) == large })
        let items = try await two.items()  // throws when the retry made a second record of the file
        #expect(Set(items.keys) == ["from-a.txt", "from-b.txt", "big.bin", "large.bin"])
    }
}

extension ServersAsOneTests {
    @Test("a backup taken as docs/self-hosting.md says (pg_dump, then blobs migrate to a folder) restores into an empty schema and bucket, and a new device gets every file back")
    func backupAndRestore() async throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("ubiquity-backup-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let (store, bucket) = try await Self.sharedStore(in: scratch)
        let schema = store[store.firstIndex(of: "--schema")! + 1]
        let cloud = try SyncRig.Cloud(store: store)
        let a = SyncRig.SyncDevice("a", cloud)
        try a.start()
        let big = SyncRig.content("kept", size: 6 << 20)
        try big.write(to: a.url("kept.bin"))
        try a.write("notes/today.txt", "backed up")
        #expect(await SyncRig.eventuallyAsync("a uploaded both") { Set(try await cloud.items().keys).isSuperset(of: ["kept.bin", "notes/today.txt"]) })
        a.stop()

        // the backup: the database first, then the content (docs/self-hosting.md, "Backups and restore")
        let dump = scratch.appendingPathComponent("ubiquity.dump").path
        let backup = scratch.appendingPathComponent("blobs").path
        try Self.postgresTool("pg_dump", ["-Fc", "-n", schema, "-f", dump, "-d", SharedStore.postgresURL!])
        let admin = cloud.device
        let copied = try admin.run(["admin"] + store + ["blobs", "migrate", "--to", backup, "--json"])
        #expect(copied.status == 0, "\(copied)")
        cloud.stop()

        // disaster: the schema and the bucket's content are gone
        try Self.postgresTool("psql", ["-q", "-d", SharedStore.postgresURL!, "-c", "DROP SCHEMA \(schema) CASCADE"])
        for object in try await bucket.list(prefix: "") { try await bucket.delete(object.key) }

        // the restore: the dump, then the content back into the bucket, then the server
        try Self.postgresTool("pg_restore", ["-d", SharedStore.postgresURL!, dump])
        let options = store.split(separator: "--blobs", maxSplits: 1).map(Array.init)
        let database = options[0]
        let s3 = Array(options[1].dropFirst())  // --s3-endpoint … --s3-credentials …
        let restored = try admin.run(["admin"] + database + ["--blobs", backup, "blobs", "migrate", "--to", bucket.location.url]
                                     + s3.map { $0.hasPrefix("--s3-") ? "--to-s3-" + String($0.dropFirst("--s3-".count)) : $0 } + ["--json"])
        #expect(restored.status == 0, "\(restored)")
        let verified = try admin.run(["admin"] + store + ["blobs", "verify", "--json"])
        #expect(verified.status == 0 && verified.stdout.contains("\"missing\":0"), "\(verified)")
        try cloud.restart()
        let b = SyncRig.SyncDevice("b", cloud)
        try b.start()
        defer { b.stop() }
        #expect(SyncRig.eventually("a new device has every file back") {
            b.read("notes/today.txt") == "backed up" && (try? Data(contentsOf: b.url("kept.bin"))) == big
        })
    }

    /// Runs a PostgreSQL client program (the newest installed), failing the test on a non-zero exit.
    static func postgresTool(_ name: String, _ arguments: [String]) throws {
        let candidates = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        let version = candidates.sorted { $0.compare($1, options: .numeric) == .orderedAscending }.last ?? ""
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/lib/postgresql/\(version)/bin/\(name)")
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw UbiquityError(.io, "\(name) \(arguments.joined(separator: " ")) exited \(process.terminationStatus)") }
    }
}

/// The throw-away PostgreSQL and S3 servers `scripts/test` starts.
enum SharedStore {
    static var postgresURL: String? { ProcessInfo.processInfo.environment["UBIQUITY_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 } }
    static var s3URL: String? { ProcessInfo.processInfo.environment["UBIQUITY_TEST_S3_URL"].flatMap { $0.isEmpty ? nil : $0 } }
}
