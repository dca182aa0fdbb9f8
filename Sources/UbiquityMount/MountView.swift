// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// How the folder's names are shown through the mount. The daemon itself (sync, the index)
/// sees the folder as it is on disk, stubs and all (``MountView/raw``); every other program sees
/// an evicted file under its own name, with its size and no stub (``MountView/documents``), and
/// opening it brings the content.
package enum MountView: Sendable, Equatable {
    /// The folder as on disk: what the daemon's own threads see.
    case raw
    /// Evicted files under their names: what other programs see.
    case documents

    /// One name of a listing as shown in this view.
    package struct Entry: Sendable, Equatable {
        /// The name shown.
        package var name: String
        /// Whether it is an evicted file (`name` is the document's, the stub's on disk).
        package var isDataless: Bool
    }

    /// The names of a folder on disk (`names`, without `.` and `..`) as this view shows them,
    /// in their order: in ``documents``, a stub stands for its document unless a file of the
    /// document's name is there too (then the stub is not shown).
    package func entries(_ names: [String]) -> [Entry] {
        guard self == .documents else { return names.map { Entry(name: $0, isDataless: false) } }
        var present: Set<String>?
        var shown: [Entry] = []
        shown.reserveCapacity(names.count)
        for name in names {
            guard Placeholder.isStubName(name), let document = Placeholder.documentName(ofStub: name) else {
                shown.append(Entry(name: name, isDataless: false))
                continue
            }
            if present == nil { present = Set(names) }
            if !present!.contains(document) { shown.append(Entry(name: document, isDataless: true)) }
        }
        return shown
    }
}
