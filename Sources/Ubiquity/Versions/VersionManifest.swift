// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// What the version store knows about one item: its versions and the versions removed lately.
///
/// Kept as `manifest.json` in the item's folder of the version store, written with `SafeSave`
/// under the item's lock, so readers see either the old or the new manifest, never a mix.
struct VersionManifest: Codable, Sendable {
    /// One stored version.
    struct Record: Codable, Sendable, Equatable {
        /// The persistent identifier (a UUID string).
        var id: String
        /// Whether it is a conflict version.
        var conflict: Bool
        /// Whether a conflict version was resolved (always true for other versions).
        var resolved: Bool
        /// The modification date of the content.
        var modificationDate: Date
        /// The device that saved the content.
        var savingComputer: String?
        /// The item's name when the version was made.
        var displayName: String
        /// Content size in bytes.
        var size: Int64
        /// SHA-256 of the content, lower-case hex.
        var sha256: String
        /// The content file's name inside the item's folder.
        var file: String
        /// When the version was added to the store.
        var added: Date
    }

    /// The layout version of this file.
    var format = 1
    /// The item's stable identifier.
    var itemID: String
    /// The item's canonical path when last seen.
    var path: String
    /// The versions, oldest addition first.
    var versions: [Record] = []
    /// Versions removed lately (without contents), so presenters told of a loss can still look
    /// the version up; newest last, at most ``tombstoneLimit``.
    var removed: [Record] = []

    /// How many removed versions are remembered.
    static let tombstoneLimit = 64

    init(itemID: String, path: String) {
        self.itemID = itemID
        self.path = path
    }

    /// Moves `record` to the removed list.
    mutating func remember(removed record: Record) {
        removed.removeAll { $0.id == record.id }
        removed.append(record)
        if removed.count > Self.tombstoneLimit { removed.removeFirst(removed.count - Self.tombstoneLimit) }
    }

    static func decode(_ data: Data, path: String) throws -> VersionManifest {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        do {
            return try decoder.decode(VersionManifest.self, from: data)
        } catch {
            throw UbiquityError(.io, "the version manifest '\(path)' is damaged; move it aside to start the item's history afresh", underlying: error)
        }
    }

    func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        do {
            return try encoder.encode(self)
        } catch {
            throw UbiquityError(.io, "cannot encode the version manifest of item \(itemID)", underlying: error)
        }
    }
}
