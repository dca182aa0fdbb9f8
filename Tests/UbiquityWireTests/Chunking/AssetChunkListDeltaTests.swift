// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Testing
import UbiquityCore
@testable import UbiquityWire

/// Chunk lists written relative to an earlier one (``AssetChunkListDelta``,
/// ``AssetChunkList/relativeJSON(to:)``): pure build, apply and wire round trips.
@Suite struct AssetChunkListDeltaTests {
    /// A made-up chunk with a distinct 64-digit hash.
    static func chunk(_ n: Int, size: Int = 65536) -> AssetChunkRef {
        AssetChunkRef(hash: SHA256.hexHash(Array("chunk-\(n)".utf8)), size: size)
    }

    static let base = (0..<1000).map { chunk($0, size: 40000 + $0) }

    /// Applies a delta after a wire round trip and checks it rebuilds `new`.
    static func roundTrip(base: [AssetChunkRef], new: [AssetChunkRef]) throws -> AssetChunkListDelta {
        let delta = AssetChunkListDelta.make(base: base, new: new)
        let wire = try AssetChunkListDelta(json: try JSONValue.parse(Data(delta.json().serialized())), path: "edits")
        #expect(wire == delta)
        #expect(try wire.apply(to: base) == new)
        #expect(delta.chunkCount == new.count)
        return delta
    }

    @Test("an in-place edit of one chunk: three pieces, one literal chunk")
    func inPlace() throws {
        var new = Self.base
        new[500] = Self.chunk(5000)
        let delta = try Self.roundTrip(base: Self.base, new: new)
        #expect(delta.pieces == [.base(0..<500), .chunks([Self.chunk(5000)]), .base(501..<1000)])
        #expect(delta.literalCount == 1)
        #expect(delta.json().serialized().count < 300)
    }

    @Test("inserts, deletes, moves, truncation, a new tail, an empty base, an empty new list")
    func shapes() throws {
        var inserted = Self.base
        inserted.insert(contentsOf: [Self.chunk(7001), Self.chunk(7002)], at: 10)
        #expect(try Self.roundTrip(base: Self.base, new: inserted).literalCount == 2)
        var deleted = Self.base
        deleted.removeSubrange(300..<340)
        #expect(try Self.roundTrip(base: Self.base, new: deleted).pieces == [.base(0..<300), .base(340..<1000)])
        let moved = Array(Self.base[500...]) + Array(Self.base[..<500])
        #expect(try Self.roundTrip(base: Self.base, new: moved).literalCount == 0)
        #expect(try Self.roundTrip(base: Self.base, new: Array(Self.base[..<10])).pieces == [.base(0..<10)])
        #expect(try Self.roundTrip(base: Self.base, new: Self.base + [Self.chunk(9000, size: 17)]).literalCount == 1)
        #expect(try Self.roundTrip(base: [], new: Self.base).pieces == [.chunks(Self.base)])
        #expect(try Self.roundTrip(base: Self.base, new: []).pieces.isEmpty)
        // a chunk of the same hash but another size is not the base's
        var resized = Self.base
        resized[3] = AssetChunkRef(hash: resized[3].hash, size: 1)
        #expect(try Self.roundTrip(base: Self.base, new: resized).literalCount == 1)
    }

    @Test("a base with shortened hashes matches by prefix; applied to the whole-hash base it gives the whole-hash list")
    func shortenedBase() throws {
        let short = Self.base.map { AssetChunkRef(hash: String($0.hash.prefix(24)), size: $0.size) }
        var new = Self.base
        new[42] = Self.chunk(4242)
        let delta = AssetChunkListDelta.make(base: short, new: new)
        #expect(delta.literalCount == 1)
        #expect(try delta.apply(to: Self.base) == new)
        #expect(AssetChunkListDelta.listChecksum(try delta.apply(to: Self.base)) == AssetChunkListDelta.listChecksum(new))
    }

    @Test("bad edits are clear errors: a run past the base's end, a malformed piece")
    func badEdits() throws {
        let delta = AssetChunkListDelta(pieces: [.base(990..<1010)])
        #expect(throws: UbiquityError.self) { _ = try delta.apply(to: Self.base) }
        for bad in [#"[{"base": [1]}]"#, #"[{"base": [-1, 2]}]"#, #"[{"base": [0, 0]}]"#, #"[{"other": 1}]"#, #"{"base": [0, 1]}"#,
                    #"[{"packedChunks": "xyz"}]"#] {
            #expect(throws: UbiquityError.self, "\(bad)") { _ = try AssetChunkListDelta(json: try JSONValue.parse(Data(bad.utf8)), path: "edits") }
        }
        do {
            _ = try AssetChunkListDelta(json: try JSONValue.parse(Data(#"[{"base": [0, 1]}, {"nothing": 1}]"#.utf8)), path: "edits")
            Issue.record("accepted a piece with neither base nor packedChunks")
        } catch let error as UbiquityError {
            #expect(error.message.contains("edits[1]"), "\(error.message)")
        }
    }

    @Test("listChecksum changes with any chunk's hash or size, and ignores hash digits past hashBytes")
    func listChecksum() {
        let sum = AssetChunkListDelta.listChecksum(Self.base)
        var other = Self.base
        other[999] = AssetChunkRef(hash: other[999].hash, size: other[999].size + 1)
        #expect(AssetChunkListDelta.listChecksum(other) != sum)
        let short = Self.base.map { AssetChunkRef(hash: String($0.hash.prefix(24)), size: $0.size) }
        #expect(AssetChunkListDelta.listChecksum(short, hashBytes: 12) == AssetChunkListDelta.listChecksum(Self.base, hashBytes: 12))
        #expect(AssetChunkListDelta.listChecksum(short, hashBytes: 12) != sum)
    }

    @Test("a download list relative to a kept list: a few hundred bytes, rebuilt exactly; another base or a wrong check is refused")
    func relativeList() throws {
        let total = { (chunks: [AssetChunkRef]) in chunks.reduce(Int64(0)) { $0 + Int64($1.size) } }
        var newChunks = Self.base
        newChunks[700] = Self.chunk(7700)
        let old = AssetChunkList(fileChecksum: "old=", size: total(Self.base), chunking: .default, hashBytes: 12, chunks: Self.base)
        let new = AssetChunkList(fileChecksum: "new=", size: total(newChunks), chunking: .default, hashBytes: 12, chunks: newChunks)
        let relative = try #require(new.relativeJSON(to: old))
        #expect(relative.serialized().count < 600)
        #expect(new.json.serialized().count > 20_000)
        let parsed = try JSONValue.parse(Data(relative.serialized()))
        #expect(try AssetChunkList(json: parsed, base: old) == new)
        // a kept list with whole hashes serves as a base for 12-byte answers
        let wholeOld = AssetChunkList(fileChecksum: "old=", size: total(Self.base), chunking: .default, chunks: Self.base)
        #expect(try AssetChunkList(json: parsed, base: wholeOld) == new)
        // the whole form still reads with a base given
        #expect(try AssetChunkList(json: new.json, base: old) == new)
        // another base, none, or a base whose list differs from the server's
        let other = AssetChunkList(fileChecksum: "other=", size: old.size, chunking: .default, hashBytes: 12, chunks: Self.base)
        #expect(throws: UbiquityError.self) { _ = try AssetChunkList(json: parsed, base: other) }
        #expect(throws: UbiquityError.self) { _ = try AssetChunkList(json: parsed, base: nil) }
        var drifted = Self.base
        drifted[10] = Self.chunk(1010, size: drifted[10].size)
        let wrong = AssetChunkList(fileChecksum: "old=", size: total(drifted), chunking: .default, hashBytes: 12, chunks: drifted)
        #expect(throws: UbiquityError.self) { _ = try AssetChunkList(json: parsed, base: wrong) }
        // nothing shared: no relative form
        let unrelated = AssetChunkList(fileChecksum: "u=", size: 10, chunking: .default, hashBytes: 12, chunks: [Self.chunk(1, size: 10)])
        #expect(new.relativeJSON(to: unrelated) == nil)
    }
}
