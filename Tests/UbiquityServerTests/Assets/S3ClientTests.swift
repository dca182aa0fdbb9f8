// SPDX-License-Identifier: Apache-2.0
import Foundation
import Hummingbird
import NIOCore
import Synchronization
import Testing
import UbiquityCore
import UbiquityServer

struct S3ClientTests {
    @Test("s3://BUCKET/PREFIX is read with the endpoint, region and addressing; bad ones are named")
    func locations() throws {
        let local = try S3Location(url: "s3://media/ubiquity/blobs", endpoint: "http://127.0.0.1:9000", region: nil, addressing: nil)
        #expect(local.bucket == "media" && local.prefix == "ubiquity/blobs/" && local.addressing == .path && local.region == "us-east-1")
        let aws = try S3Location(url: "s3://media", endpoint: nil, region: "eu-west-1", addressing: nil)
        #expect(aws.endpoint.absoluteString == "https://s3.eu-west-1.amazonaws.com" && aws.addressing == .virtualHost && aws.prefix == "")
        #expect(throws: UbiquityError.self) { try S3Location(url: "s3://Not_A_Bucket/x", endpoint: nil, region: nil, addressing: nil) }
        #expect(throws: UbiquityError.self) { try S3Location(url: "/srv/blobs", endpoint: nil, region: nil, addressing: nil) }
        #expect(throws: UbiquityError.self) { try S3Location(url: "s3://media", endpoint: "ftp://x", region: nil, addressing: nil) }
    }

    @Test("credentials come from --s3-credentials, else the AWS variables, else ~/.aws/credentials (profile AWS_PROFILE); their absence is named")
    func credentials() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ubiquity-credentials-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder.appendingPathComponent(".aws"), withIntermediateDirectories: true)
        let file = folder.appendingPathComponent(".aws/credentials")
        try """
            # a comment
            [default]
            aws_access_key_id = AKDEFAULT
            aws_secret_access_key = secret-default

            [work]
            aws_access_key_id=AKWORK
            aws_secret_access_key=secret-work
            aws_session_token = token-work
            """.write(to: file, atomically: true, encoding: .utf8)
        typealias Credentials = S3RequestSigner.Credentials
        #expect(try Credentials.resolve(file: file.path, environment: [:]).accessKeyID == "AKDEFAULT")
        let work = try Credentials.resolve(file: file.path, environment: ["AWS_PROFILE": "work"])
        #expect(work == Credentials(accessKeyID: "AKWORK", secretAccessKey: "secret-work", sessionToken: "token-work"))
        #expect(try Credentials.resolve(file: nil, environment: ["AWS_ACCESS_KEY_ID": "AKENV", "AWS_SECRET_ACCESS_KEY": "s", "HOME": folder.path]).accessKeyID == "AKENV")
        #expect(try Credentials.resolve(file: nil, environment: ["HOME": folder.path]).accessKeyID == "AKDEFAULT")
        #expect { try Credentials.resolve(file: nil, environment: ["HOME": "/nonexistent"]) } throws: { error in
            (error as? UbiquityError)?.message.contains("AWS_ACCESS_KEY_ID") == true
        }
        #expect { try Credentials.resolve(file: file.path, environment: ["AWS_PROFILE": "missing"]) } throws: { error in
            (error as? UbiquityError)?.message.contains("[missing]") == true
        }
    }

    @Test("5xx and SlowDown answers are retried with backoff; a refusal is not, and its S3 code is in the error")
    func retries() async throws {
        let calls = Mutex(0)
        let router = Router()
        router.put("/bucket/p/busy") { _, _ -> Response in
            let call = calls.withLock { $0 += 1; return $0 }
            if call == 1 { return Response(status: .internalServerError) }
            if call == 2 {
                return Response(status: .serviceUnavailable, body: .init(byteBuffer: ByteBuffer(string: "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>")))
            }
            return Response(status: .ok)
        }
        router.put("/bucket/p/refused") { _, _ -> Response in
            calls.withLock { $0 += 100 }
            return Response(status: .forbidden, body: .init(byteBuffer: ByteBuffer(string: "<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>")))
        }
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                              onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: AssetTestSupport.logger)
        let task = Task { try await app.run() }
        defer { task.cancel() }
        var ports = stream.makeAsyncIterator()
        let port = try #require(await ports.next())
        let location = try S3Location(endpoint: URL(string: "http://127.0.0.1:\(port)")!, bucket: "bucket", prefix: "p")
        let client = S3Client(location: location, credentials: .init(accessKeyID: "k", secretAccessKey: "s"),
                              retry: .init(attempts: 4, initialDelay: .milliseconds(5)), logger: AssetTestSupport.logger)
        try await client.put("busy", body: ByteBuffer(string: "x"))
        #expect(calls.withLock { $0 } == 3)
        await #expect { try await client.put("refused", body: ByteBuffer(string: "x")) } throws: { error in
            guard let error = error as? UbiquityError else { return false }
            return error.code == .permissionDenied && error.message.contains("AccessDenied")
        }
        #expect(calls.withLock { $0 } == 103)
    }

    @Test("against a real S3 server: objects whole and in ranges, copies that restart the age, listings, multipart uploads",
          .enabled(if: BlobStoreFixture.s3URL != nil))
    func objects() async throws {
        let client = try await BlobStoreFixture.makeBucket(prefix: "some/prefix")
        try await client.put("a/one", body: ByteBuffer(string: "hello, world"))
        #expect(try await client.get("a/one").map { String(buffer: $0) } == "hello, world")
        #expect(try await client.get("a/one", range: 7..<12).map { String(buffer: $0) } == "world")
        #expect(try await client.get("a/missing") == nil)
        let before = try #require(try await client.head("a/one"))
        #expect(before.size == 12)
        #expect(try await client.touch("a/one"))
        #expect(try await client.touch("a/missing") == false)
        #expect(try await client.get("a/one").map { String(buffer: $0) } == "hello, world")
        try await client.put("b/two", body: ByteBuffer(string: "2"))
        #expect(try await client.list(prefix: "a/").map(\.key) == ["a/one"])
        #expect(try await client.list(prefix: "").map(\.key) == ["a/one", "b/two"])

        let part = [UInt8](repeating: 7, count: S3Client.minimumPartSize)
        let id = try await client.createMultipartUpload("big")
        let first = try await client.uploadPart("big", uploadID: id, number: 1, body: ByteBuffer(bytes: part))
        let second = try await client.uploadPart("big", uploadID: id, number: 2, body: ByteBuffer(string: "tail"))
        try await client.completeMultipartUpload("big", uploadID: id, parts: [second, first])
        #expect(try await client.head("big")?.size == Int64(part.count + 4))
        #expect(try await client.get("big", range: Int64(part.count - 1)..<Int64(part.count + 4)).map { Array($0.readableBytesView) } == [7] + Array("tail".utf8))
        try await client.delete("big")
        try await client.delete("big")  // deleting what is gone is not an error
        #expect(try await client.head("big") == nil)
    }

    @Test("a bucket that does not exist gives an error naming S3's code", .enabled(if: BlobStoreFixture.s3URL != nil))
    func missingBucket() async throws {
        let location = try S3Location(endpoint: BlobStoreFixture.s3URL!, bucket: "no-such-bucket-\(UInt32.random(in: 0...UInt32.max))")
        let store = PackBlobStore(objects: S3Client(location: location, credentials: .init(accessKeyID: "test", secretAccessKey: "test"),
                                                 retry: .init(attempts: 1), logger: AssetTestSupport.logger), logger: AssetTestSupport.logger)
        await #expect { try await store.checkReachable() } throws: { error in
            (error as? UbiquityError)?.message.contains("NoSuchBucket") == true
        }
    }
}
