// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Testing
import UbiquityCore
import UbiquityWire

struct FastCDCTests {
    static func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var random = SeededRandom(seed: seed)
        var bytes = [UInt8](repeating: 0, count: count)
        var index = 0
        while index < count {
            var word = random.next()
            for _ in 0..<8 where index < count {
                bytes[index] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                index += 1
            }
        }
        return bytes
    }

    static func chunks(of bytes: [UInt8], parameters: FastCDC.Parameters = .default) -> [[UInt8]] {
        var offset = 0
        return FastCDC.chunkLengths(of: bytes, parameters: parameters).map { length in
            defer { offset += length }
            return Array(bytes[offset..<offset + length])
        }
    }

    @Test("chunk lengths cover the input, respect the bounds, and do not depend on how the input is fed")
    func deterministicAndIncremental() {
        let bytes = Self.randomBytes(3 << 20, seed: 7)
        let whole = FastCDC.chunkLengths(of: bytes)
        #expect(whole.reduce(0, +) == bytes.count)
        for length in whole.dropLast() {
            #expect(length >= 16 << 10 && length <= 256 << 10)
        }
        // Fed in pieces of odd, varying sizes (1 byte to 100 KiB).
        var random = SeededRandom(seed: 99)
        var chunker = FastCDC()
        var pieces: [Int] = []
        var offset = 0
        while offset < bytes.count {
            let size = min(bytes.count - offset, Int(random.next() % 100_000) + 1)
            pieces += bytes[offset..<offset + size].withUnsafeBytes { chunker.update($0) }
            offset += size
        }
        if let last = chunker.finish() { pieces.append(last) }
        #expect(pieces == whole)
        #expect(FastCDC.chunkLengths(of: bytes) == whole)
    }

    @Test("the cut points are fixed by the format (gear table and masks)")
    func knownVector() {
        let lengths = FastCDC.chunkLengths(of: Self.randomBytes(1 << 20, seed: 2020))
        #expect(lengths == FastCDCTests.expectedLengths)
    }

    /// The chunk lengths of `randomBytes(1 MiB, seed: 2020)` with the default parameters. A
    /// change here means clients and servers of different versions no longer deduplicate.
    static let expectedLengths = [
        33151, 108025, 67354, 121719, 65732, 28039, 74523, 72694, 65855, 47599, 67100, 62307, 101624, 79943, 52911,
    ]

    @Test("inserting one byte in the middle changes at most two chunks")
    func boundaryShift() {
        let original = Self.randomBytes(4 << 20, seed: 11)
        var edited = original
        edited.insert(0x42, at: original.count / 2 + 12_345)
        let before = Set(Self.chunks(of: original).map { SHA256.hexHash($0) })
        let after = Self.chunks(of: edited).map { SHA256.hexHash($0) }
        let changed = after.filter { !before.contains($0) }
        #expect(changed.count >= 1 && changed.count <= 2)
        // Changing one byte in place, too.
        var replaced = original
        replaced[original.count / 3] ^= 0xFF
        #expect(Self.chunks(of: replaced).map { SHA256.hexHash($0) }.filter { !before.contains($0) }.count <= 2)
    }

    @Test("chunks average near the target size, and normalization keeps them between min and max")
    func averageSize() {
        let bytes = Self.randomBytes(16 << 20, seed: 5)
        let lengths = FastCDC.chunkLengths(of: bytes)
        let mean = Double(bytes.count) / Double(lengths.count)
        #expect(mean > 40_000 && mean < 100_000, "mean chunk \(mean)")
        // Repetitive content still cuts at the maximum size.
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        #expect(FastCDC.chunkLengths(of: zeros) == [262_144, 262_144, 262_144, 262_144])
    }

    @Test("small inputs are one chunk; empty input is none")
    func smallInputs() {
        #expect(FastCDC.chunkLengths(of: [UInt8]()) == [])
        #expect(FastCDC.chunkLengths(of: [UInt8](repeating: 1, count: 100)) == [100])
        #expect(FastCDC.chunkLengths(of: Self.randomBytes(16 << 10, seed: 1)) == [16 << 10])
    }

    @Test("parameters are validated and round-trip through JSON")
    func parameters() throws {
        #expect(throws: UbiquityError.self) { try FastCDC.Parameters(minimumSize: 10, averageSize: 64, maximumSize: 128) }
        #expect(throws: UbiquityError.self) { try FastCDC.Parameters(minimumSize: 1024, averageSize: 3000, maximumSize: 8192) }
        #expect(throws: UbiquityError.self) { try FastCDC.Parameters(minimumSize: 1024, averageSize: 4096, maximumSize: 4096) }
        #expect(throws: UbiquityError.self) { try FastCDC.Parameters(minimumSize: 1024, averageSize: 4096, maximumSize: 8192, normalizationLevel: 4) }
        let small = try FastCDC.Parameters(minimumSize: 1024, averageSize: 4096, maximumSize: 16384, normalizationLevel: 1)
        #expect(try FastCDC.Parameters(json: small.json, path: "chunking") == small)
        #expect(try FastCDC.Parameters(json: FastCDC.Parameters.default.json, path: "") == .default)
        let lengths = FastCDC.chunkLengths(of: Self.randomBytes(1 << 20, seed: 3), parameters: small)
        #expect(lengths.dropLast().allSatisfy { $0 >= 1024 && $0 <= 16384 })
        #expect(lengths.count > 100)
    }

    @Test("chunk lists round-trip packed and as JSON; bad ones are refused with their path")
    func chunkLists() throws {
        let chunks = (0..<5).map { AssetChunkRef(hash: SHA256.hexHash([UInt8($0)]), size: 1000 * ($0 + 1)) }
        let packed = AssetChunkRef.packed(chunks)
        #expect(try AssetChunkRef.unpack(packed, path: "packedChunks") == chunks)
        let reader = try WireReader(.object(["chunks": .array(chunks.map(\.json))]), path: "")
        #expect(try AssetChunkRef.list(from: reader) == chunks)
        let packedReader = try WireReader(.object(["packedChunks": .string(packed)]), path: "")
        #expect(try AssetChunkRef.list(from: packedReader) == chunks)
        #expect(throws: UbiquityError.self) { try AssetChunkRef.unpack("AAAA", path: "p") }
        let bad = try WireReader(.object(["chunks": .array([.object(["hash": .string("xyz"), "size": .integer(1)])])]), path: "")
        #expect { try AssetChunkRef.list(from: bad) } throws: { error in
            (error as? UbiquityError)?.message.hasPrefix("chunks[0].hash") == true
        }
    }

    @Test("the upload status round-trips through JSON")
    func uploadStatus() throws {
        let status = AssetUploadStatus(received: 42, size: 100, maximumSize: 1000, chunking: .default,
                                       missingURL: "../chunks/missing", chunkURL: "../chunks/", manifestURL: "../manifest")
        #expect(try AssetUploadStatus(json: status.json) == status)
        #expect(status.offersDeduplication)
        #expect(!AssetUploadStatus(received: 0, maximumSize: 10).offersDeduplication)
    }
}
