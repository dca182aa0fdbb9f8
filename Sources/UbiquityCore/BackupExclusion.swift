// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The "exclude from backup" (skip-backup) attribute, stored as macOS stores it.
///
/// macOS keeps `NSURLIsExcludedFromBackupKey` as the extended attribute
/// `com.apple.metadata:com_apple_backup_excludeItem` whose value is a binary property list
/// holding the string `com.apple.backupd`. Linux lets unprivileged users write only the `user.`
/// namespace, so Ubiquity writes `user.com.apple.metadata:com_apple_backup_excludeItem` with the
/// same value. Any value counts as excluded when reading, as Time Machine's readers accept
/// `true` or plain strings too.
public enum BackupExclusion {
    /// The attribute name.
    public static let attributeName = "user.com.apple.metadata:com_apple_backup_excludeItem"

    /// The attribute value: `bplist00` encoding of the ASCII string `com.apple.backupd`.
    public static let attributeValue: [UInt8] = {
        let string = Array("com.apple.backupd".utf8)  // 17 bytes
        var bytes = Array("bplist00".utf8)
        bytes += [0x5F, 0x10, UInt8(string.count)] + string  // ASCII string, length as a 1-byte int
        let offsetTable = bytes.count
        bytes.append(0x08)  // the only object starts right after the header
        bytes += [0, 0, 0, 0, 0, 0, 1, 1]  // 6 unused bytes, offset size 1, object reference size 1
        bytes += [0, 0, 0, 0, 0, 0, 0, 1]  // number of objects
        bytes += [0, 0, 0, 0, 0, 0, 0, 0]  // top object
        bytes += [0, 0, 0, 0, 0, 0, 0, UInt8(offsetTable)]
        return bytes
    }()

    /// Whether the item at `path` is excluded from backup (and so from sync).
    public static func isExcluded(_ path: String) throws -> Bool {
        try ExtendedAttributes.value(attributeName, at: path) != nil
    }

    /// Marks or unmarks the item at `path`.
    public static func setExcluded(_ excluded: Bool, _ path: String) throws {
        guard FileManager.default.fileExists(atPath: path) else {
            throw UbiquityError(.notFound, "no item at '\(path)'")
        }
        if excluded {
            try ExtendedAttributes.setValue(attributeValue, for: attributeName, at: path)
        } else {
            try ExtendedAttributes.removeValue(for: attributeName, at: path)
        }
    }
}
