// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// One item's share of a claim, in lock terms.
package struct ItemLock: Hashable, Sendable {
    /// The mode of a lock on one item.
    package enum Mode: UInt8, Sendable {
        /// A coordinated read of the item: shares with other reads.
        case read
        /// A read of a folder and everything inside it (reading `forUploading`).
        case subtreeRead
        /// A coordinated write of the item (not of what a folder contains).
        case write
        /// Deleting, moving or replacing: the item and everything inside it.
        case subtreeWrite

        var isWrite: Bool { self == .write || self == .subtreeWrite }
        var isSubtree: Bool { self == .subtreeRead || self == .subtreeWrite }
    }
    /// The canonical path.
    package var path: String
    /// The mode.
    package var mode: Mode

    package init(path: String, mode: Mode) {
        self.path = path
        self.mode = mode
    }

    /// Whether two locks held by different purposes exclude each other (Apple's rules).
    package func conflicts(with other: ItemLock) -> Bool {
        if path == other.path { return mode.isWrite || other.mode.isWrite }
        if CanonicalPath.isSameOrDescendant(other.path, of: path) {
            return mode == .subtreeWrite || (mode == .subtreeRead && other.mode.isWrite)
        }
        if CanonicalPath.isSameOrDescendant(path, of: other.path) {
            return other.mode == .subtreeWrite || (other.mode == .subtreeRead && mode.isWrite)
        }
        return false
    }
}

/// The access arbiter: which claims hold access, which wait, and who goes next.
///
/// A value-type state machine with no I/O. Claims are granted in FIFO order among those that
/// conflict (a reader queued behind a writer waits, so writers do not starve), with two
/// exceptions from Apple's rules: claims with the same purpose never conflict, and a claim whose
/// purpose is being messaged by a granted claim (a presenter saving in answer to a reader) goes
/// ahead of the queue and ignores the claim that is messaging it.
package struct ArbiterState: Sendable {
    package struct Claim: Sendable {
        package var id: UInt64
        package var purpose: String
        package var locks: [ItemLock]
        /// Purposes of the presenters this claim is messaging before its accessor runs.
        package var messaging: Set<String> = []
    }

    package private(set) var granted: [UInt64: Claim] = [:]
    package private(set) var waiting: [Claim] = []

    package init() {}

    /// Adds a claim; returns the ids granted as a result (possibly this one).
    package mutating func request(_ claim: Claim) -> [UInt64] {
        waiting.append(claim)
        return grantWaiting()
    }

    /// Records which purposes a granted claim is messaging (so their saves may go ahead).
    package mutating func setMessaging(_ id: UInt64, purposes: Set<String>) -> [UInt64] {
        guard granted[id] != nil else { return [] }
        granted[id]!.messaging = purposes
        return grantWaiting()
    }

    /// Releases a granted claim or withdraws a waiting one; returns the ids granted as a result.
    package mutating func remove(_ id: UInt64) -> [UInt64] {
        if granted.removeValue(forKey: id) == nil {
            guard let index = waiting.firstIndex(where: { $0.id == id }) else { return [] }
            waiting.remove(at: index)
        }
        return grantWaiting()
    }

    /// Whether `id` is waiting.
    package func isWaiting(_ id: UInt64) -> Bool { waiting.contains { $0.id == id } }

    /// Whether two claims exclude each other.
    package static func conflict(_ a: Claim, _ b: Claim) -> Bool {
        guard a.purpose != b.purpose else { return false }
        for x in a.locks { for y in b.locks where x.conflicts(with: y) { return true } }
        return false
    }

    private mutating func grantWaiting() -> [UInt64] {
        var result: [UInt64] = []
        var index = 0
        while index < waiting.count {
            let claim = waiting[index]
            let priority = granted.values.contains { $0.messaging.contains(claim.purpose) }
            var blocked = granted.values.contains { holder in
                !(holder.messaging.contains(claim.purpose)) && Self.conflict(holder, claim)
            }
            if !blocked && !priority {
                blocked = waiting[..<index].contains { Self.conflict($0, claim) }
            }
            if blocked {
                index += 1
            } else {
                waiting.remove(at: index)
                granted[claim.id] = claim
                result.append(claim.id)
                // Granting only adds holders, so earlier claims stay blocked: continue from here.
            }
        }
        return result
    }
}
