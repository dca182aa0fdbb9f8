// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
import Ubiquity
@testable import UbiquitySync
import UbiquityCloudKit

/// A device's own uploads do not come back to it through the zone's changes: when the server
/// says a batch's saves are all that changed since the device's change token, the token moves
/// past them; otherwise they come back and are dropped without being judged (their journaled
/// change tag is the fetched one). Other devices' changes are never lost either way. Real
/// server on loopback (``SyncBatchTests/Harness``), passes run by hand, records counted.
@Suite struct SyncOwnChangesTests {
    typealias Harness = SyncBatchTests.Harness

    static func text(_ string: String) -> Data { Data(string.utf8) }

    @Test func theTokenMovesOnlyAlongAnUnbrokenChainOfOwnBatches() {
        let zone = SyncRecord.zoneID
        func step(_ before: String, _ after: String) -> ModifyChangeTokens {
            ModifyChangeTokens(zoneID: zone, before: ServerChangeToken(rawValue: before), after: ServerChangeToken(rawValue: after))
        }
        let t = ServerChangeToken.init(rawValue:)
        #expect(ModifyChangeTokens.advanced(t("1"), by: [step("1", "3"), step("3", "5")]) == t("5"))
        // a change from elsewhere between two batches: the chain stops before it
        #expect(ModifyChangeTokens.advanced(t("1"), by: [step("1", "3"), step("4", "6")]) == t("3"))
        // the token was behind already, or there is none, or no tokens came: nothing moves
        #expect(ModifyChangeTokens.advanced(t("0"), by: [step("1", "3")]) == nil)
        #expect(ModifyChangeTokens.advanced(nil, by: [step("1", "3")]) == nil)
        #expect(ModifyChangeTokens.advanced(t("1"), by: []) == nil)
    }

    @Test func overlappingSavesChainInWhateverOrderTheServerAppliedThem() {
        let zone = SyncRecord.zoneID
        func step(_ before: String, _ after: String) -> ModifyChangeTokens {
            ModifyChangeTokens(zoneID: zone, before: ServerChangeToken(rawValue: before), after: ServerChangeToken(rawValue: after))
        }
        let t = ServerChangeToken.init(rawValue:)
        // the later request was applied first: both still chain
        #expect(ModifyChangeTokens.chained(t("1"), by: [step("3", "5"), step("1", "3")]) == (t("5"), []))
        // its answer came first: it waits, and chains when the earlier one's answer arrives
        let first = ModifyChangeTokens.chained(t("1"), by: [step("3", "5")])
        #expect(first.token == nil && first.unchained == [step("3", "5")])
        #expect(ModifyChangeTokens.chained(t("1"), by: first.unchained + [step("1", "3")]) == (t("5"), []))
        // a change from elsewhere in between: the step after it stays unchained
        #expect(ModifyChangeTokens.chained(t("1"), by: [step("1", "3"), step("4", "6")]) == (t("3"), [step("4", "6")]))
        #expect(ModifyChangeTokens.chained(nil, by: [step("1", "3")]) == (nil, [step("1", "3")]))
    }

    @Test func theParentFolderOfAPathIsWhatNSStringSays() {
        for path in ["/a/b/c.txt", "/a/b", "/a", "/", "/a/b/", "/a//b/c", "/ü/ß é/漢字.txt", "/a/./b", "/a/../b", "/top"] {
            #expect(SyncFiles.parent(of: path) == (path as NSString).deletingLastPathComponent, "\(path)")
        }
    }

    @Test func ownUploadsAreNotFetchedBackAndOthersChangesStillAre() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("A")
            let b = try await harness.device("B")
            try await a.engine.pass()
            try await b.engine.pass()
            // 4 windows of 200: the first (with the folders) saved alone, the others two at once
            for index in 0..<700 { try a.write("dir\(index % 3)/file\(index).txt", SyncBatchTests.content(index)) }
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(SyncBatchTests.files(in: b.folder).count == 700)
            // A's next fetch brings nothing: its 703 records (700 files, 3 folders) were skipped
            a.transport.reset()
            try await a.engine.pass()
            #expect(a.transport.count("changes/zone") == 1)
            #expect(a.transport.count("changes/zone records") == 0)
            // another device's change still comes
            try b.write("dir0/from-b.txt", Self.text("from B"))
            try await b.engine.pass()
            a.transport.reset()
            try await a.engine.pass()
            #expect(a.transport.count("changes/zone records") == 1)
            #expect(a.read("dir0/from-b.txt") == Self.text("from B"))
        }
    }

    @Test func aChangeFromElsewhereBetweenFetchAndUploadIsFetchedWithTheOwnOnes() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("A")
            let b = try await harness.device("B")
            try a.write("doc.txt", Self.text("one"))
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(b.read("doc.txt") == Self.text("one"))
            // B changes something after A's last fetch; A then sends without fetching first
            try b.write("doc.txt", Self.text("two, from B"))
            try b.write("b-new.txt", Self.text("new on B"))
            try await b.engine.pass()
            for index in 0..<20 { try a.write("a\(index).txt", Self.text("a \(index)")) }
            try await a.engine.pushLocal()
            // A's token is behind B's changes: they come, with A's own 20 (dropped unjudged)
            a.transport.reset()
            try await a.engine.pass()
            #expect(a.transport.count("changes/zone records") == 22)
            #expect(a.read("doc.txt") == Self.text("two, from B"))
            #expect(a.read("b-new.txt") == Self.text("new on B"))
            for index in 0..<20 { #expect(a.read("a\(index).txt") == Self.text("a \(index)")) }
            // and nothing is fetched twice
            a.transport.reset()
            try await a.engine.pass()
            #expect(a.transport.count("changes/zone records") == 0)
            try await b.engine.pass()
            for index in 0..<20 { #expect(b.read("a\(index).txt") == Self.text("a \(index)")) }
        }
    }

    @Test func editsGoingBackAndForthEachReachTheOtherDevice() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("A")
            let b = try await harness.device("B")
            try a.write("doc.txt", Self.text("one"))
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(b.read("doc.txt") == Self.text("one"))
            // each edit has another size, so no stat looks unchanged whatever the clock
            for (round, text) in ["two, from B", "three, from A again", "four, B once more", "five: A, and this is the last one"].enumerated() {
                let (writer, reader) = round % 2 == 0 ? (b, a) : (a, b)
                try writer.write("doc.txt", Self.text(text))
                try await writer.engine.pass()
                try await reader.engine.pass()
                #expect(reader.read("doc.txt") == Self.text(text), "round \(round)")
                // the writer's next pass fetches nothing of its own, and changes nothing
                try await writer.engine.pass()
                #expect(writer.read("doc.txt") == Self.text(text), "round \(round)")
            }
            #expect(a.events.all.contains { if case .conflict = $0 { true } else { false } } == false)
            #expect(b.events.all.contains { if case .conflict = $0 { true } else { false } } == false)
        }
    }
}
