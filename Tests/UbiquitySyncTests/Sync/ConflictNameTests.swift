// SPDX-License-Identifier: Apache-2.0
import Testing
@testable import UbiquitySync

/// The name a device's own copy takes when the server's item takes its path: Dropbox's and
/// Syncthing's spelling, `stem (conflicted copy DEVICE XXXX).ext`, next to the original; and the
/// journal key a paused mass delete is kept under, which a daemon of an earlier build wrote.
@Suite struct ConflictNameTests {
    @Test func aConflictCopyIsNamedAfterTheDevice() {
        let name = SyncEngine.conflictName("Notes/plan.txt", device: "laptop")
        #expect(name.hasPrefix("Notes/plan (conflicted copy laptop "))
        #expect(name.hasSuffix(").txt"))
        #expect(name.count == "Notes/plan (conflicted copy laptop XXXX).txt".count)
        let bare = SyncEngine.conflictName("Makefile", device: "desk")
        #expect(bare.hasPrefix("Makefile (conflicted copy desk ") && bare.hasSuffix(")"))
    }

    @Test func aPausedMassDeleteKeepsItsJournalKey() {
        #expect(SyncEngine.massDeletePausedKey == "massDeletePaused")
    }
}
