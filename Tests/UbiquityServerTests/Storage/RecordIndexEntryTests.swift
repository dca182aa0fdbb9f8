// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
import UbiquityServer

/// A BYTES field's index row: the base64 of the bytes cut to the indexed length, made from only
/// the bytes that reach it — the same text as cutting the whole base64.
@Suite struct RecordIndexEntryTests {
    @Test func bytesAreIndexedAsTheCutBase64OfTheWhole() {
        for size in [0, 1, 2, 3, 190, 191, 192, 193, 194, 255, 256, 1024, 65_536] {
            let data = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) })
            let expected = RecordIndexEntry.indexedText(data.base64EncodedString())
            let entry = RecordIndexEntry.entry(field: "inline", value: .bytes(data), zoneName: "Z")
            #expect(entry == RecordIndexEntry(field: "inline", text: expected), "\(size) bytes")
            #expect((entry?.text?.utf8.count ?? 0) <= RecordIndexEntry.maximumTextBytes)
            // a slice of a larger buffer (a non-zero start index) too
            let sliced = (Data([1, 2, 3]) + data).dropFirst(3)
            #expect(RecordIndexEntry.entry(field: "inline", value: .bytes(sliced), zoneName: "Z")?.text == expected, "\(size) bytes, sliced")
        }
    }
}
