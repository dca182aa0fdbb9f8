// SPDX-License-Identifier: Apache-2.0
import Foundation
import Ubiquity
import UbiquityCore

extension SyncEngine {
    /// The journal key of a confirmation of paused deletes (kept until they are sent).
    static let massDeleteConfirmedKey = "massDeleteConfirmed"
    /// The journal key of the paused deletes, `COUNT/TOTAL` (for status).
    static let massDeletePausedKey = "massDeletePaused"

    /// Confirms the paused local deletes: a pass started now sends them. The confirmation is
    /// kept in the journal until they are sent, so it survives a restart.
    /// - Throws: `notFound` when no deletes wait (nothing is confirmed ahead of time).
    package func confirmDeletes() throws {
        guard let paused = try pausedDeletes() else { throw UbiquityError(.notFound, "no deletes wait for a confirmation") }
        _ = paused
        try journal.setValue(String(Int(Date().timeIntervalSince1970)), Self.massDeleteConfirmedKey)
        logger.notice("deletes confirmed: they are sent")
        wake()
    }

    /// The local deletes waiting for ``confirmDeletes()`` (how many, and of how many synced
    /// items), or nil when none wait.
    package func pausedDeletes() throws -> (count: Int, total: Int)? {
        try Self.pausedDeletes(in: journal)
    }

    /// The deletes paused in `journal` (see ``pausedDeletes()``), read without an engine.
    package static func pausedDeletes(in journal: SyncJournal) throws -> (count: Int, total: Int)? {
        guard let value = try journal.value(massDeletePausedKey) else { return nil }
        let parts = value.split(separator: "/").compactMap { Int($0) }
        return parts.count == 2 ? (parts[0], parts[1]) : nil
    }

    /// Whether a pass may send `count` local deletes out of `total` synced items: not when they
    /// are more than ``massDeleteShare`` of them and more than ``massDeleteMinimum``, until
    /// confirmed. A new pause is reported once (an event and an error in the log).
    func deletesAllowed(_ count: Int, total: Int) throws -> Bool {
        let massive = count > massDeleteMinimum && Double(count) > massDeleteShare * Double(total)
        let confirmed = try journal.value(Self.massDeleteConfirmedKey) != nil
        if !massive || confirmed {
            let paused = try journal.value(Self.massDeletePausedKey) != nil
            if memory.massDeletePaused != nil || paused {
                memory.massDeletePaused = nil
                try journal.setValue(nil, Self.massDeletePausedKey)
            }
            if count == 0 { try clearMassDeleteConfirmation() }
            return true
        }
        if memory.massDeletePaused != count {
            memory.massDeletePaused = count
            try journal.setValue("\(count)/\(total)", Self.massDeletePausedKey)
            logger.error("\(count) of \(total) items were deleted here at once: the deletes are not sent until confirmed (ubiq sync confirm-deletes); everything else keeps syncing",
                         metadata: ["ubiquity.folder": "\(folder)"])
            onEvent?(.massDeletePaused(count: count, total: total))
        }
        return false
    }

    /// Forgets a confirmation once its deletes were sent.
    func clearMassDeleteConfirmation() throws {
        if try journal.value(Self.massDeleteConfirmedKey) != nil { try journal.setValue(nil, Self.massDeleteConfirmedKey) }
    }
}
