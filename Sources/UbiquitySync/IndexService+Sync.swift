// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import UbiquityCore
import UbiquityIndex
import UbiquityStore

extension IndexService {
    /// Indexes and watches `folder` too (the synced folder, once sync starts there: its engine
    /// follows the index's change feed), or brings it up to date when it is indexed already (its
    /// content was moved aside for another account: the folder made anew is watched again).
    package func indexSyncedFolder(_ folder: String) async {
        do {
            try await host.refresh(folder)
        } catch {
            logger.error("cannot index the synced folder", metadata: ["ubiquity.root": "\(folder)", "ubiquity.error": "\(error)"])
        }
    }
}

extension IndexService {
    /// Answers the control socket's sync requests (`evict`, `download`, `item`) with `handler`
    /// (the daemon's folder sync); without one they fail with `serviceUnavailable`.
    package func setSyncRequests(_ handler: @escaping ControlService.SyncRequestHandler) {
        control.setSyncRequests(handler)
    }

    /// Sets who tells the folder sync's health in the control socket's `status`.
    package func setSyncHealth(_ provider: @escaping @Sendable () async -> SyncHealthReport?) {
        control.setSyncHealth(provider)
    }
}
