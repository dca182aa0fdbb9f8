// SPDX-License-Identifier: Apache-2.0
import UbiquityWire
import UbiquityCore

/// A link from one record to another (`CKRecord.Reference`), stored in a field.
public struct Reference: Sendable, Hashable, CustomStringConvertible {
    /// What happens to the record holding the reference when the target is deleted
    /// (`CKRecord.ReferenceAction`).
    public enum Action: UInt, Sendable, Hashable, CaseIterable {
        /// Nothing: the reference just dangles.
        case none = 0
        /// The holder is deleted with the target (cascading).
        case deleteSelf = 1
        /// The target must exist when the reference is saved and cannot be deleted while
        /// referenced (CKWS `VALIDATE`).
        case validate = 2
    }

    /// The target.
    public let recordID: Record.ID
    /// What deleting the target does.
    public let action: Action

    /// A reference to the record with `recordID`.
    public init(recordID: Record.ID, action: Action) {
        self.recordID = recordID
        self.action = action
    }

    /// A reference to `record`.
    public init(record: Record, action: Action) {
        self.init(recordID: record.recordID, action: action)
    }

    /// `→ recordName`.
    public var description: String { "→\(recordID)" }
}

extension Reference.Action {
    var wire: WireReference.Action {
        switch self {
        case .none: return .none
        case .deleteSelf: return .deleteSelf
        case .validate: return .validate
        }
    }

    init(wire: WireReference.Action?) {
        switch wire {
        case .deleteSelf?: self = .deleteSelf
        case .validate?: self = .validate
        case .none?, nil: self = .none
        }
    }
}
