// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Something the sync engine did that users' hooks hear of (``HookEvent``).
package enum SyncEvent: Sendable, Hashable {
    /// A local change reached the server (the path relative to the folder).
    case didUpload(path: String)
    /// A remote change was written here.
    case didDownload(path: String)
    /// Both sides changed the item: the server's version took the name, this device's is a conflict version.
    case conflict(path: String)
    /// An upload failed (retried at the next pass); `quota` when the server refused it for the quota.
    case uploadFailed(path: String, error: String, quota: Bool)
    /// More than the allowed share of the folder was deleted here at once: the deletes wait for
    /// ``SyncEngine/confirmDeletes()`` (`count` of `total` synced items).
    case massDeletePaused(count: Int, total: Int)

    /// The hook invocation for the event, with the folder's absolute path and the container.
    package func invocation(folder: String, container: String) -> HookInvocation {
        var facts = ["container": container, "folder": folder]
        let event: HookEvent
        switch self {
        case .didUpload(let path): event = .didUpload; facts["path"] = folder + "/" + path
        case .didDownload(let path): event = .didDownload; facts["path"] = folder + "/" + path
        case .conflict(let path): event = .conflict; facts["path"] = folder + "/" + path
        case .uploadFailed(let path, let error, let quota):
            event = quota ? .quota : .uploadFailed
            facts["path"] = folder + "/" + path
            facts["error"] = error
        case .massDeletePaused(let count, let total):
            event = .massDeletePaused
            facts["count"] = String(count)
            facts["total"] = String(total)
        }
        return HookInvocation(event, facts: facts)
    }
}
