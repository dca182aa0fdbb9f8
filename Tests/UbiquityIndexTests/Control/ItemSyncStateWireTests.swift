// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityIndex
import UbiquityStore

/// An item's sync state on the control socket: the typed states travel as their raw values, and
/// a state this build does not know decodes as `unknown` with the item's other facts intact.
@Suite struct ItemSyncStateWireTests {
    @Test func statesRoundTripAsTheirRawValues() throws {
        for status in SyncItemStatus.allCases {
            let state = ItemSyncState(sync: status, downloadingStatus: .notDownloaded)
            let line = try ControlWire.encode(state)
            #expect(String(decoding: line, as: UTF8.self).contains(#""sync":"\#(status.rawValue)""#))
            #expect(try ControlWire.decode(ItemSyncState.self, from: line) == state)
        }
        #expect(SyncItemStatus.inConflict.rawValue == "in conflict")
    }

    @Test func aStateFromANewerDaemonIsUnknownNotAnError() throws {
        var state = ItemSyncState(sync: .uploaded, isDownloading: true, percentDownloaded: 40)
        var text = String(decoding: try ControlWire.encode(state), as: UTF8.self)
        text = text.replacingOccurrences(of: #""sync":"uploaded""#, with: #""sync":"paused""#)
        let decoded = try ControlWire.decode(ItemSyncState.self, from: Array(text.utf8))
        state.sync = .unknown
        #expect(decoded == state)
    }
}
