// SPDX-License-Identifier: Apache-2.0
import Foundation
import Ubiquity

/// The version store of a test process: one temporary folder, set once as the process's
/// (`VersionStoreLocation.processDefault`) by the in-process sync rigs before their first
/// engine, so that no test writes into the user's `~/.local/share/ubiquity/versions` (the
/// simulator had written 13,000 items there, and every version written read and rewrote its
/// 1.2 MB index). Each test's items are under its own temporary folders' paths, so tests running
/// in parallel share the store without meeting. A test that needs its own store still sets
/// `VersionStoreLocation.override` for its task.
package enum TestVersionStore {
    private static let folder: URL = {
        let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ubq-versions-\(getpid())", isDirectory: true)
        try? FileManager.default.removeItem(at: url)  // a process of the same number before
        VersionStoreLocation.processDefault = url
        atexit { try? FileManager.default.removeItem(atPath: NSTemporaryDirectory() + "/ubq-versions-\(getpid())") }
        return url
    }()

    /// Sets the process's version store to its temporary folder (once; later calls do nothing)
    /// and returns it.
    @discardableResult
    package static func isolate() -> URL { folder }
}
