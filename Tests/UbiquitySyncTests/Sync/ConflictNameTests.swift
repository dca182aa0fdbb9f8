// SPDX-License-Identifier: Apache-2.0
import Testing
@testable import UbiquitySync
import UbiquityCore

/// The name a device's own copy takes when the server's item takes its path: Dropbox's and
/// Syncthing's spelling, `stem (conflicted copy DEVICE XXXX).ext`, next to the original; and the
/// journal key a paused mass delete is kept under, which a daemon of an earlier build wrote.
@Suite struct ConflictNameTests {
    @Test func aConflictCopyIsNamedAfterTheDevice() {
        let name = SyncEngine.conflictName("Notes/plan.txt", device: "laptop", suffix: RandomSource.system.hexadecimal(4))
        #expect(name.hasPrefix("Notes/plan (conflicted copy laptop "))
        #expect(name.hasSuffix(").txt"))
        #expect(name.count == "Notes/plan (conflicted copy laptop XXXX).txt".count)
        let bare = SyncEngine.conflictName("Makefile", device: "desk", suffix: "0A1B")
        #expect(bare == "Makefile (conflicted copy desk 0A1B)")
        // a seeded source names the same copies again
        #expect(RandomSource(seed: 9).hexadecimal(4) == RandomSource(seed: 9).hexadecimal(4))
    }

    @Test func aPausedMassDeleteKeepsItsJournalKey() {
        #expect(SyncEngine.massDeletePausedKey == "massDeletePaused")
    }
}
