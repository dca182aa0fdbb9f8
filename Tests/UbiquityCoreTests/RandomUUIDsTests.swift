// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
@testable import UbiquityCore

@Suite struct RandomUUIDsTests {
    @Test func theyAreDistinctVersion4UUIDsSpelledAsFoundationSpellsThem() throws {
        let uuids = RandomUUIDs.make(10_000)
        #expect(uuids.count == 10_000)
        #expect(Set(uuids).count == 10_000)
        for text in uuids.prefix(500) {
            let parsed = try #require(UUID(uuidString: text))
            #expect(parsed.uuidString == text)  // upper case, dashes where Foundation puts them
            #expect(parsed.uuid.6 >> 4 == 4)  // version 4
            #expect(parsed.uuid.8 >> 6 == 0b10)  // RFC 4122 variant
        }
        // the other bits vary: every hex digit appears in every random position
        for position in [0, 9, 14 + 1, 19 + 1, 35] {
            let digits = Set(uuids.map { $0.utf8[$0.utf8.index($0.utf8.startIndex, offsetBy: position)] })
            #expect(digits.count == 16, "position \(position)")
        }
        #expect(RandomUUIDs.make(0).isEmpty)
        #expect(RandomUUIDs.make(1) != RandomUUIDs.make(1))
    }
}
