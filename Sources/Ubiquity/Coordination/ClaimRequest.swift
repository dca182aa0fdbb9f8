// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// One item of a claim: its canonical path and how it is accessed.
package struct ItemRequest: Sendable, Hashable {
    /// How the item is accessed.
    package enum Access: Sendable, Hashable {
        case read(FileCoordinator.ReadingOptions)
        case write(FileCoordinator.WritingOptions)
    }
    package var path: String
    package var access: Access

    package init(path: String, access: Access) {
        self.path = path
        self.access = access
    }

    /// The lock this access takes.
    package var lock: ItemLock {
        switch access {
        case .read(let options):
            return ItemLock(path: path, mode: options.contains(.forUploading) ? .subtreeRead : .read)
        case .write(let options):
            let subtree = !options.isDisjoint(with: [.forDeleting, .forMoving, .forReplacing])
            return ItemLock(path: path, mode: subtree ? .subtreeWrite : .write)
        }
    }
}

/// A request for coordinated access to one or more items.
package struct ClaimRequest: Sendable {
    package var id: UInt64
    package var purpose: String
    package var items: [ItemRequest]
    /// `prepare(forReadingItemsAt:…)`: presenters are messaged but no access is held.
    package var isPrepare: Bool
    /// How long the claim may wait, and how long each presenter may take to answer.
    package var timeout: Duration
    /// Who asked, for error messages ("process 1234").
    package var origin: String = "process \(getpid())"

    package init(id: UInt64, purpose: String, items: [ItemRequest], isPrepare: Bool, timeout: Duration) {
        self.id = id
        self.purpose = purpose
        self.items = items
        self.isPrepare = isPrepare
        self.timeout = timeout
    }

    package var arbiterClaim: ArbiterState.Claim {
        ArbiterState.Claim(id: id, purpose: purpose, locks: isPrepare ? [] : items.map(\.lock))
    }
}
