// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Synchronization
import Testing
import UbiquityTestSupport
import UbiquityCore
@testable import UbiquitySync

/// The big-file path of the engine: the sender reads a large file once (no staging copy) and
/// never saves a mix of two versions; the receiver keeps each synced file's chunk list, so a
/// chunk-level download need not read its previous version while that is unchanged. Reads and
/// bytes are counted (``SyncEngine/deltaStatistics``), never time.
@Suite struct SyncBigFileTests {
    typealias Harness = SyncBatchTests.Harness

    /// Moves the change time of the device's file without touching its content, size,
    /// modification time or mode (what a kept chunk list is keyed by, besides the inode).
    static func touchChangeTime(_ device: SyncBatchTests.Device, _ relative: String) throws {
        let path = device.folder.appendingPathComponent(relative).path
        let before = try #require(FileStamp.of(path))
        var now = before
        // the change time moves with the kernel's clock tick: repeat until it did (a hang guard aside)
        for _ in 0..<200 where now.changeNanoseconds == before.changeNanoseconds {
            usleep(5_000)
            #expect(chmod(path, mode_t(before.mode)) == 0)
            now = try #require(FileStamp.of(path))
        }
        #expect(now.changeNanoseconds != before.changeNanoseconds)
        #expect(!now.contentDiffers(from: before))
    }

    @Test func theKeptChunkListIsUsedWhileTheFileIsUnchangedAndIgnoredOnceItChanged() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("A")
            let b = try await harness.device("B")
            let size = 4 << 20
            var content = SyncDeltaTests.random(size, seed: 190)
            try a.write("big.bin", content)
            try await a.engine.pass()
            #expect(a.engine.deltaStatistics.uploadScans == 1, "the sender reads the file once")
            #expect(a.engine.deltaStatistics.listsKept == 1, "the sender keeps the list it made")
            try await b.engine.pass()
            #expect(b.read("big.bin") == content)
            #expect(b.engine.deltaStatistics.listsKept == 1, "a whole download keeps the server's list")

            // unchanged basis: its kept list is used, the basis is not cut
            content[size / 2] ^= 0x41
            try SyncDeltaTests.edit(a, "big.bin", content, at: 1_700_000_100)
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(b.read("big.bin") == content)
            var statistics = b.engine.deltaStatistics
            #expect(statistics.assembled == 1 && statistics.basisScans == 0, "\(statistics)")
            #expect(statistics.bytesReceived < 1 << 20)
            #expect(statistics.listsKept == 2, "the new version's list is kept in turn")

            // and again from the list kept by that download
            content[size / 4] ^= 0x42
            try SyncDeltaTests.edit(a, "big.bin", content, at: 1_700_000_200)
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(b.read("big.bin") == content)
            statistics = b.engine.deltaStatistics
            #expect(statistics.assembled == 2 && statistics.basisScans == 0, "\(statistics)")

            // the file's change time moved (metadata touched): the kept list is not trusted
            try Self.touchChangeTime(b, "big.bin")
            content[size - 1000] ^= 0x43
            try SyncDeltaTests.edit(a, "big.bin", content, at: 1_700_000_300)
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(b.read("big.bin") == content)
            statistics = b.engine.deltaStatistics
            #expect(statistics.assembled == 3 && statistics.basisScans == 1, "\(statistics)")
            #expect(a.engine.deltaStatistics.uploadScans == 4, "one read per upload")

            // two files fetched ahead together (the prefetch) keep their lists too (new files
            // written together by the batched writer do not yet: their first edit cuts the basis)
            var first = SyncDeltaTests.random(2 << 20, seed: 192), second = SyncDeltaTests.random(2 << 20, seed: 193)
            try a.write("one.bin", first)
            try a.write("two.bin", second)
            try await a.engine.pass()
            try await b.engine.pass()
            first[10] ^= 1
            second[second.count - 10] ^= 1
            try SyncDeltaTests.edit(a, "one.bin", first, at: 1_700_000_400)
            try SyncDeltaTests.edit(a, "two.bin", second, at: 1_700_000_400)
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(b.read("one.bin") == first && b.read("two.bin") == second)
            statistics = b.engine.deltaStatistics
            #expect(statistics.assembled == 5 && statistics.basisScans <= 3, "\(statistics)")
            let scans = statistics.basisScans
            first[20] ^= 1
            second[second.count - 20] ^= 1
            try SyncDeltaTests.edit(a, "one.bin", first, at: 1_700_000_500)
            try SyncDeltaTests.edit(a, "two.bin", second, at: 1_700_000_500)
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(b.read("one.bin") == first && b.read("two.bin") == second)
            statistics = b.engine.deltaStatistics
            #expect(statistics.assembled == 7 && statistics.basisScans == scans, "the lists kept after a prefetch are used: \(statistics)")
        }
    }

    @Test func aFileChangedBetweenReadingAndUploadingNeverLandsAsAMix() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("A")
            let b = try await harness.device("B")
            let size = 4 << 20
            let first = SyncDeltaTests.random(size, seed: 191)
            var second = first
            for index in stride(from: 0, to: size, by: 1 << 20) { second[index] ^= 0x11 }
            let folder = a.folder
            let fired = Atomic<Int>(0)
            // a new file (streamed whole): changed after it was read, before it is uploaded
            await a.engine.setAfterScan { [second] relative in
                guard fired.add(1, ordering: .relaxed).oldValue == 0 else { return }
                let device = SyncBatchTests.Device(engine: a.engine, transport: a.transport, events: a.events, folder: folder, index: a.index)
                try? SyncDeltaTests.edit(device, relative, second, at: 1_700_000_500)
            }
            try a.write("big.bin", first)
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(b.read("big.bin") == nil, "nothing was saved from the read that the change overtook")
            try await a.engine.pass()  // the item was queued again
            try await b.engine.pass()
            #expect(b.read("big.bin") == second)
            #expect(fired.load(ordering: .relaxed) == 2)

            // an edit (only the changed chunk travels): changed again before the chunk is sent
            var third = second
            third[size / 2 + 7] ^= 0x22
            var fourth = third
            fourth[size / 2 + 9] ^= 0x33
            fired.store(0, ordering: .relaxed)
            await a.engine.setAfterScan { [fourth] relative in
                guard fired.add(1, ordering: .relaxed).oldValue == 0 else { return }
                let device = SyncBatchTests.Device(engine: a.engine, transport: a.transport, events: a.events, folder: folder, index: a.index)
                try? SyncDeltaTests.edit(device, relative, fourth, at: 1_700_000_700)
            }
            try SyncDeltaTests.edit(a, "big.bin", third, at: 1_700_000_600)
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(b.read("big.bin") == second, "the overtaken read saved nothing")
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(b.read("big.bin") == fourth)
            await a.engine.setAfterScan(nil)
        }
    }
}
