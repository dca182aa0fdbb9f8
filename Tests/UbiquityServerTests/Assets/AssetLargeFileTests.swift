// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import Testing
import UbiquityCore
import UbiquityServer

/// `size` pseudo-random bytes in 1 MiB pieces, generated as they are asked for (never all in
/// memory).
struct GeneratedBytes: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let size: Int64
    let seed: UInt64

    struct AsyncIterator: AsyncIteratorProtocol {
        var remaining: Int64
        var random: SeededRandom
        mutating func next() async -> ByteBuffer? {
            guard remaining > 0 else { return nil }
            let count = Int(Swift.min(remaining, 1 << 20))
            var buffer = ByteBufferAllocator().buffer(capacity: count + 8)
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count + 8) { target in
                let words = target.baseAddress!.assumingMemoryBound(to: UInt64.self)
                for index in 0..<(count + 7) / 8 { words[index] = random.next() }
                return count
            }
            remaining -= Int64(count)
            return buffer
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(remaining: size, random: SeededRandom(seed: seed)) }

    /// The checksum of the bytes, computed by generating them again.
    func checksum() async -> String {
        var hash = SHA256()
        for await buffer in self { buffer.withUnsafeReadableBytes { hash.update(bufferPointer: $0) } }
        return Data(hash.finalize()).base64EncodedString()
    }
}

@Suite(.enabled(if: ProcessInfo.processInfo.environment["UBIQUITY_SLOW_TESTS"] == "1"))
struct AssetLargeFileTests {
    @Test("a large asset (1 GiB, or UBIQUITY_SLOW_TEST_MIB) streams up and down through the HTTP routes and comes back identical")
    func largeFile() async throws {
        let server = try await AssetTestServer.start(configuration: AssetConfiguration(maximumAssetSize: 2 << 30))
        defer { server.shutdown() }
        let mebibytes = Int64(ProcessInfo.processInfo.environment["UBIQUITY_SLOW_TEST_MIB"] ?? "") ?? 1024
        let content = GeneratedBytes(size: mebibytes << 20, seed: 99)
        var request = HTTPClientRequest(url: server.uploadURL())
        request.method = .POST
        request.body = .stream(content, length: .known(content.size))
        let reply = try await AssetTestServer.collect(HTTPClient.shared.execute(request, timeout: .seconds(600)))
        #expect(reply.status == 200)
        let checksum = await content.checksum()
        #expect(reply.singleFile?.fileChecksum == checksum)
        let url = server.service.downloadURL(fileChecksum: checksum, size: content.size, container: "c", baseURL: server.url)
        var download = HTTPClientRequest(url: url.replacingOccurrences(of: "${f}", with: "big"))
        download.method = .GET
        let response = try await HTTPClient.shared.execute(download, timeout: .seconds(600))
        var hash = SHA256()
        var received: Int64 = 0
        for try await buffer in response.body {
            buffer.withUnsafeReadableBytes { hash.update(bufferPointer: $0) }
            received += Int64(buffer.readableBytes)
        }
        #expect(received == content.size)
        #expect(Data(hash.finalize()).base64EncodedString() == checksum)
    }
}
