// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
@testable import UbiquityWire

/// The chunk-list checksum (``AssetChecksum``) as a pure function: its exact bytes (checked
/// against an independent computation), its version byte and how the two kinds are told apart.
@Suite struct AssetChecksumTests {
    static let first = AssetChunkRef(hash: "2725aea2d2dea736fbe38e41ecb518f6098cb68ac77362c5e34faafb356567c5", size: 70000)  // SHA-256("chunk-1")
    static let second = AssetChunkRef(hash: "b6f3c15844fe12f966ad90db59da8332a9a6d9dfd198ac83949be2045ec6dc1e", size: 1234)  // SHA-256("chunk-2")

    @Test("the version-1 checksum of a list: 0x01 then SHA-256 of the tag line and the (hash, big-endian size) pairs")
    func knownValue() {
        // computed with Python's hashlib: base64(b"\x01" + sha256(tag + h1 + pack(">I", 70000) + h2 + pack(">I", 1234)))
        #expect(AssetChecksum.chunkList([Self.first, Self.second]) == "AVEDiAxa8oCrkL7f3BMp3f8Kyh8ETdM10haX2OjsHlbw")
        #expect(AssetChecksum.chunkList([]) == "AZ+Kj6KHxs34icG/WiBg7E9qsDMRZmshrREunq9MT1Lt")
        let digest = Data(base64Encoded: AssetChecksum.chunkList([Self.first]))!
        #expect(digest.count == 33)
        #expect(digest.first == AssetChecksum.chunkListVersion)
        #expect(String(decoding: AssetChecksum.chunkListTag, as: UTF8.self) == "ubiquity-chunk-list 1 fastcdc2020 16384 65536 262144 2\n")
    }

    @Test("order, sizes and hashes all count")
    func sensitive() {
        let base = AssetChecksum.chunkList([Self.first, Self.second])
        #expect(AssetChecksum.chunkList([Self.second, Self.first]) != base)
        #expect(AssetChecksum.chunkList([Self.first, AssetChunkRef(hash: Self.second.hash, size: 1235)]) != base)
        #expect(AssetChecksum.chunkList([Self.first]) != base)
        #expect(AssetChecksum.chunkList([Self.first, Self.second], matches: base))
        #expect(!AssetChecksum.chunkList([Self.first], matches: base))
        // a whole-content SHA-256 is never taken for a list checksum
        let whole = Data(repeating: 1, count: 32).base64EncodedString()
        #expect(!AssetChecksum.chunkList([Self.first, Self.second], matches: whole))
    }

    @Test("the two kinds are told apart by length and version byte, in base64 and in hex")
    func kinds() throws {
        let whole = Data(repeating: 7, count: 32).base64EncodedString()
        let list = AssetChecksum.chunkList([Self.first])
        #expect(whole.count == 44 && whole.hasSuffix("="))
        #expect(list.count == 44 && !list.hasSuffix("="))
        #expect(AssetChecksum.kind(of: whole) == .sha256)
        #expect(AssetChecksum.kind(of: list) == .chunkList)
        #expect(AssetChecksum.kind(of: Data([2] + [UInt8](repeating: 0, count: 32)).base64EncodedString()) == nil)  // another version
        #expect(AssetChecksum.kind(of: "not base64") == nil)
        #expect(AssetChecksum.kind(of: Data(count: 31).base64EncodedString()) == nil)
        let listHex = try #require(AssetChecksum.hex(list))
        #expect(listHex.count == 66 && listHex.hasPrefix("01"))
        #expect(AssetChecksum.kind(ofHex: listHex) == .chunkList)
        #expect(AssetChecksum.hex(whole)?.count == 64)
        #expect(AssetChecksum.kind(ofHex: String(repeating: "ab", count: 32)) == .sha256)
        #expect(AssetChecksum.kind(ofHex: "02" + String(repeating: "ab", count: 32)) == nil)
        #expect(AssetChecksum.base64(hex: listHex) == list)
        #expect(AssetChecksum.base64(hex: "xyz") == nil)
    }
}
