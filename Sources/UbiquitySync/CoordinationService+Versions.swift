// SPDX-License-Identifier: Apache-2.0
import Foundation

extension CoordinationService {
    /// Calls `observer` with the item path of every version a client added, resolved or removed
    /// (on a socket thread; keep it short): the daemon's sync tells the other devices of a
    /// conflict resolved by `ubiq resolve` or an app, or of a conflict version an app (a
    /// `Document`) kept, without waiting for its next pass.
    package func observeSettledVersions(_ observer: @escaping @Sendable (_ path: String) -> Void) {
        versionObservers.withLock { $0.append(observer) }
    }

    /// A client added, resolved or removed a version of the item at `path`.
    func versionSettled(path: String) {
        for observer in versionObservers.withLock({ $0 }) { observer(path) }
    }
}
