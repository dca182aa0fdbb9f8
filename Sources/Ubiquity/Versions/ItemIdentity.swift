// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// The stable identifier of an item, kept in the extended attribute `user.ubiquity.item-id` so
/// that it follows the item through renames and safe-saves (`SafeSave` copies `user.` attributes).
enum ItemIdentity {
    /// The attribute name.
    static let attributeName = "user.ubiquity.item-id"

    /// The identifier stored on the item at `path`, or nil when it has none, it is not a UUID, or
    /// the file system has no user attributes.
    static func read(at path: String) -> String? {
        guard let bytes = try? ExtendedAttributes.value(attributeName, at: path),
              let text = String(bytes: bytes, encoding: .utf8),
              let uuid = UUID(uuidString: text) else { return nil }
        return uuid.uuidString
    }

    /// Stores `id` on the item at `path`. Returns false when the attribute cannot be written
    /// (no user attributes, no permission): the path index is then the only link.
    @discardableResult
    static func assign(_ id: String, at path: String) -> Bool {
        (try? ExtendedAttributes.setValue(Array(id.utf8), for: attributeName, at: path)) != nil
    }
}
