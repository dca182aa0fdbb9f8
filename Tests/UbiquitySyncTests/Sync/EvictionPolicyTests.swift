// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
import UbiquityCore
@testable import UbiquitySync

/// The least-recently-used policy and the budget's sizes (pure), and the placeholder on disk.
@Suite struct EvictionPolicyTests {
    @Test func sizesParse() throws {
        #expect(try EvictionPolicy.parseSize("4096") == 4096)
        #expect(try EvictionPolicy.parseSize("500M") == 500 << 20)
        #expect(try EvictionPolicy.parseSize("10G") == 10 << 30)
        #expect(try EvictionPolicy.parseSize("10g") == 10 << 30)
        #expect(try EvictionPolicy.parseSize("1.5K") == 1536)
        #expect(try EvictionPolicy.parseSize("2GiB") == 2 << 30)
        #expect(try EvictionPolicy.parseSize("2GB") == 2 << 30)
        #expect(try EvictionPolicy.parseSize("1T") == 1 << 40)
        for bad in ["", "G", "ten", "-1M", "5X", "1e400"] {
            #expect(throws: UbiquityError.self, "\(bad)") { try EvictionPolicy.parseSize(bad) }
        }
    }

    @Test func leastRecentlyUsedFirstUntilWithinBudget() {
        let files = [
            EvictionPolicy.Candidate(id: "c", path: "c", size: 1000, lastUsed: 300),
            EvictionPolicy.Candidate(id: "a", path: "a", size: 1000, lastUsed: 100),
            EvictionPolicy.Candidate(id: "b", path: "b", size: 1000, lastUsed: 200),
        ]
        #expect(EvictionPolicy.order(files).map(\.id) == ["a", "b", "c"])
        #expect(EvictionPolicy.victims(files, budget: 2500).map(\.id) == ["a"])
        #expect(EvictionPolicy.victims(files, budget: 1000).map(\.id) == ["a", "b"])
        #expect(EvictionPolicy.victims(files, budget: 3000).isEmpty)
        #expect(EvictionPolicy.victims(files, budget: 0).map(\.id) == ["a", "b", "c"])
        // used at the same moment: the larger goes first (fewer evictions)
        let tie = [EvictionPolicy.Candidate(id: "small", path: "s", size: 10, lastUsed: 5),
                   EvictionPolicy.Candidate(id: "large", path: "l", size: 5000, lastUsed: 5)]
        #expect(EvictionPolicy.victims(tie, budget: 100).map(\.id) == ["large"])
    }

    @Test func aStubHasApplesKeysTheDocumentsModeTimeAndAttributes() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ubq-ph-" + UUID().uuidString.prefix(8))
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let document = folder.appendingPathComponent("movie.bin").path
        try Data("the document".utf8).write(to: URL(fileURLWithPath: document))
        let attributes = (try? ExtendedAttributes.setValue(Array("v".utf8), for: "user.test.kept", at: document)) != nil
        let marker = Placeholder(name: "movie.bin", id: "ID", changeTag: "tag", hash: "abc", size: 5_000_000)
        let stubPath = Placeholder.stubPath(for: document)
        try marker.write(at: stubPath, mode: 0o640, modifiedMilliseconds: 1_600_000_000_123, attributesFrom: document)
        let stamp = try #require(FileStamp.of(stubPath))
        #expect(stamp.size < 1024, "a small file, whatever the document's size")
        #expect(stamp.mode == 0o640)
        #expect(stamp.modificationNanoseconds == 1_600_000_000_123_000_000)
        #expect(Placeholder.read(stubAt: stubPath) == marker)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stubPath))) as? [String: Any])
        #expect(json["NSURLNameKey"] as? String == "movie.bin" && json["NSURLFileSizeKey"] as? Int == 5_000_000)
        #expect(json["NSURLFileResourceTypeKey"] as? String == "NSURLFileResourceTypeRegular")
        if attributes { #expect(try ExtendedAttributes.value("user.test.kept", at: stubPath) == Array("v".utf8)) }
        // while the document is there it is not evicted; once it is gone, the stub stands for it
        #expect(!Placeholder.isEvicted(document))
        unlink(document)
        #expect(Placeholder.isEvicted(document) && Placeholder.standingFor(document) == marker)
        #expect(Placeholder.stamp(ofItemAt: document)?.inode == stamp.inode)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == [".movie.bin.icloud"], "no temporary left")
        // something that is not a stub's JSON is not read as one
        try Data("not json".utf8).write(to: URL(fileURLWithPath: stubPath))
        #expect(Placeholder.read(stubAt: stubPath) == nil)
    }
}
