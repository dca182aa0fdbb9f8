// SPDX-License-Identifier: Apache-2.0
import Foundation

extension SyncEngine {
    /// Why a name found by the scan is not synced.
    static let invalidNameMessage = "the name is not valid UTF-8 (record names are Unicode text), so it is not synced; rename it to sync it"

    /// Reports each name a scan found but cannot sync (not valid UTF-8), once: an error in
    /// the log and the `upload-failed` hook (the path with each bad byte written `\xNN`).
    func reportUnsyncableNames(_ found: Set<String>) {
        for path in memory.unsyncableNames.takeNew(found) {
            logger.error("not synced: \(Self.invalidNameMessage)", metadata: ["ubiquity.path": "\(path)"])
            onEvent?(.uploadFailed(path: path, error: Self.invalidNameMessage, quota: false))
        }
    }
}
