// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

extension FileVersion {
    /// Makes the item at `url` hold this version's content, keeping the item's name, and returns
    /// the item's URL. Apple's `replaceItem(at:options:)`.
    ///
    /// The content is written with `SafeSave` (temporary file, fsync, rename), so the item keeps
    /// its permissions and its `user.` extended attributes: the skip-backup attribute and the
    /// item's identity (its versions) survive. When there is no item at `url`, it is created.
    /// The stored content is checked against its SHA-256 first; a damaged version changes nothing.
    ///
    /// - Parameter options: `.byMoving` removes this version from the store afterwards (and tells
    ///   presenters the item lost it); refused for the current version.
    /// - Throws: `notFound` when the version was removed, `invalidArgument` for relative paths or
    ///   when `url` is a folder, `io` for damaged content.
    @discardableResult
    public func replaceItem(at url: URL, options: ReplacingOptions = []) throws -> URL {
        let destination = try Self.itemPath(of: url)
        if isCurrent {
            if options.contains(.byMoving) {
                throw UbiquityError(.invalidArgument, "the current version of '\(itemPath)' cannot be moved out of the store; move the item itself instead")
            }
            if destination == itemPath { return URL(fileURLWithPath: destination) }
            guard FileStamp.of(itemPath) != nil else { throw UbiquityError(.notFound, "no item at '\(itemPath)'") }
            try VersionContent.write(from: itemPath, over: destination, expected: nil)
            return URL(fileURLWithPath: destination)
        }
        guard FileStamp.of(CanonicalPath.parentPath(of: destination)) != nil else {
            throw UbiquityError(.notFound, "the folder of '\(destination)' does not exist")
        }
        guard FileStamp.of(self.url.path) != nil else {
            throw UbiquityError(.notFound, "version \(persistentIdentifier) of '\(itemPath)' was removed; its content is gone")
        }
        let expected = sha256.map { VersionContent.Summary(size: size, sha256: $0) }
        try VersionContent.write(from: self.url.path, over: destination, expected: expected)
        if options.contains(.byMoving) { try remove() }
        return URL(fileURLWithPath: destination)
    }
}
