// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// Resource values that swift-corelibs-foundation does not implement on Linux.
///
/// Foundation's `resourceValues(forKeys:)` never fills `isExcludedFromBackup` on Linux and its
/// `setResourceValues(_:)` silently ignores it. These methods add it, stored as macOS stores it
/// (see `BackupExclusion`), and pass every other key to Foundation.
///
/// Porting notes: Apple's `url.resourceValues(forKeys:)` → `url.ubiquityResourceValues(forKeys:)`,
/// `url.setResourceValues(_:)` → `url.setUbiquityResourceValues(_:)`. The shorthands
/// ``ubiquityIsExcludedFromBackup`` and ``setUbiquityExcludedFromBackup(_:)`` have no Apple
/// counterpart; they carry the `ubiquity` prefix so they never clash with Foundation's members.
extension URL {
    /// The keys these methods handle themselves.
    private static let ubiquityHandledKeys: Set<URLResourceKey> = [.isExcludedFromBackupKey]

    /// Like Foundation's `resourceValues(forKeys:)`, and fills `isExcludedFromBackup` from the
    /// skip-backup extended attribute.
    ///
    /// - Throws: `invalidArgument` for a relative path or a URL that is not a file URL, `notFound`
    ///   when there is no item, `unsupported` when `isExcludedFromBackupKey` is asked for on a
    ///   file system without user extended attributes, and Foundation's errors for other keys.
    public func ubiquityResourceValues(forKeys keys: Set<URLResourceKey>) throws -> URLResourceValues {
        let path = try ubiquityItemPath()
        var values = try resourceValues(forKeys: keys.subtracting(Self.ubiquityHandledKeys))
        if keys.contains(.isExcludedFromBackupKey) {
            values.isExcludedFromBackup = try BackupExclusion.isExcluded(path)
        }
        return values
    }

    /// Like Foundation's `setResourceValues(_:)`, and applies `isExcludedFromBackup` by setting
    /// or removing the skip-backup extended attribute. Set it again after every save that does not
    /// go through `SafeSave` (Apple's documentation gives the same advice).
    ///
    /// Foundation's keys are applied first, then `isExcludedFromBackup`.
    ///
    /// - Throws: `invalidArgument`, `notFound` as ``ubiquityResourceValues(forKeys:)``;
    ///   `unsupported` when the file system has no user extended attributes; Foundation's errors.
    public mutating func setUbiquityResourceValues(_ values: URLResourceValues) throws {
        let path = try ubiquityItemPath()
        let excluded = values.isExcludedFromBackup
        // Foundation on Linux ignores the keys it does not implement, isExcludedFromBackup among them.
        let foundationKeys = Set(values.allValues.keys).subtracting(Self.ubiquityHandledKeys)
        if !foundationKeys.isEmpty { try setResourceValues(values) }
        if let excluded { try BackupExclusion.setExcluded(excluded, path) }
    }

    /// Whether the item is excluded from backup (and so from sync): the skip-backup attribute.
    /// Same errors as ``ubiquityResourceValues(forKeys:)``.
    public var ubiquityIsExcludedFromBackup: Bool {
        get throws {
            try BackupExclusion.isExcluded(ubiquityItemPath())
        }
    }

    /// Sets or clears the skip-backup attribute: `setUbiquityResourceValues` with only
    /// `isExcludedFromBackup`.
    public func setUbiquityExcludedFromBackup(_ excluded: Bool) throws {
        try BackupExclusion.setExcluded(excluded, ubiquityItemPath())
    }

    /// The absolute path of an existing item, or the error that explains why there is none.
    private func ubiquityItemPath() throws -> String {
        guard isFileURL || scheme == nil else {
            throw UbiquityError(.invalidArgument, "'\(absoluteString)' is not a file URL")
        }
        let path = self.path
        guard path.hasPrefix("/") else {
            throw UbiquityError(.invalidArgument, "path '\(path)' is relative; an absolute path is required")
        }
        guard FileStamp.of(path) != nil else { throw UbiquityError(.notFound, "no item at '\(path)'") }
        return path
    }
}
