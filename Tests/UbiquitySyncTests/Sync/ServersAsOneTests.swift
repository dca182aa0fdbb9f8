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

/// The throw-away PostgreSQL and S3 servers `scripts/test` starts.
enum SharedStore {
    static var postgresURL: String? { ProcessInfo.processInfo.environment["UBIQUITY_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 } }
    static var s3URL: String? { ProcessInfo.processInfo.environment["UBIQUITY_TEST_S3_URL"].flatMap { $0.isEmpty ? nil : $0 } }
}
