// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
import Ubiquity
import UbiquityCore
@testable import UbiquitySync
import UbiquityCloudKit

/// Chunk-level downloads in the engine: when another device edits a file this device has
/// synced, only the changed chunks travel; the rest is copied from the local version. Bytes
/// are counted (``SyncEngine/deltaStatistics``), never time.
@Suite struct SyncDeltaTests {
    typealias Harness = SyncBatchTests.Harness

    static func random(_ count: Int, seed: UInt64) -> Data {
        var random = SeededRandom(seed: seed)
        var out = Data()
        out.reserveCapacity(count + 8)
        while out.count < count { withUnsafeBytes(of: random.next()) { out.append(contentsOf: $0) } }
        return out.prefix(count)
    }

    /// Writes `data` over the device's file in place, with another modification time.
    static func edit(_ device: SyncBatchTests.Device, _ relative: String, _ data: Data, at seconds: TimeInterval) throws {
        let path = device.folder.appendingPathComponent(relative).path
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.write(contentsOf: data)
        try handle.truncate(atOffset: UInt64(data.count))
        try handle.close()
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: seconds)], ofItemAtPath: path)
    }

    @Test func oneByteChangedInABigFileSendsAChunkNotTheFile() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("A")
            let b = try await harness.device("B")
            let size = 4 << 20
            var content = Self.random(size, seed: 90)
            try a.write("big.bin", content)
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(b.read("big.bin") == content)
            #expect(b.engine.deltaStatistics.downloads == 0, "a new file has no basis")

            content[size / 2] ^= 0x41
            try Self.edit(a, "big.bin", content, at: 1_700_000_100)
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(b.read("big.bin") == content)
            let statistics = b.engine.deltaStatistics
            #expect(statistics.downloads == 1 && statistics.assembled == 1)
            #expect(statistics.bytesReceived < 1 << 20, "B received \(statistics.bytesReceived) bytes for a one-byte edit of \(size)")
            #expect(statistics.bytesCopied >= Int64(size - (512 << 10)))
            // the sender recognised the unchanged chunks from its kept list: only around the edit was cut
            let sent = a.engine.deltaStatistics
            #expect(sent.uploadScans == 2 && sent.uploadChunksReused >= 50, "A reused \(sent.uploadChunksReused) chunks")
            #expect(sent.uploadBytesCut < Int64(size) + (1 << 20), "A cut \(sent.uploadBytesCut) bytes (the first upload cut all \(size))")

            // two files at once go through the prefetch; each reuses its own previous version
            var first = Self.random(2 << 20, seed: 91), second = Self.random(2 << 20, seed: 92)
            try a.write("one.bin", first)
            try a.write("two.bin", second)
            try await a.engine.pass()
            try await b.engine.pass()
            first[10] ^= 1
            second[second.count - 10] ^= 1
            try Self.edit(a, "one.bin", first, at: 1_700_000_200)
            try Self.edit(a, "two.bin", second, at: 1_700_000_200)
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(b.read("one.bin") == first && b.read("two.bin") == second)
            let after = b.engine.deltaStatistics
            #expect(after.assembled == 3)
            #expect(after.bytesReceived - statistics.bytesReceived < 1 << 20)
        }
    }

    @Test("a one-byte edit of a 32 MiB file: B fetches the changed chunk and a list relative to its kept one, not the whole list")
    func relativeListOnTheWire() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("A")
            let b = try await harness.device("B")
            let size = 32 << 20
            var content = Self.random(size, seed: 95)
            try a.write("big.bin", content)
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(b.read("big.bin") == content)
            let old = try AssetFileScan.scan(a.folder.appendingPathComponent("big.bin")).chunkList
            content[size / 3] ^= 0x41
            try Self.edit(a, "big.bin", content, at: 1_700_000_300)
            let new = try AssetFileScan.scan(a.folder.appendingPathComponent("big.bin")).chunkList
            let known = Set(old.chunks)
            let changed = new.chunks.filter { !known.contains($0) }.reduce(Int64(0)) { $0 + Int64($1.size) }
            let before = b.engine.deltaStatistics.bytesReceived
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(b.read("big.bin") == content)
            // the whole list (~512 chunks of 16 bytes, base64) alone would be ~11 KB
            let received = b.engine.deltaStatistics.bytesReceived - before
            #expect(received - changed < 4096, "B received \(received) bytes for \(changed) bytes of changed chunks")
        }
    }
}
