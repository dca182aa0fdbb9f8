// SPDX-License-Identifier: Apache-2.0
import Foundation
import Ubiquity
import UbiquityCore
import UbiquityWire
import UbiquityCloudKit

/// Content hashes of either kind (``AssetChecksum``): the journal and the records hold a
/// whole-content SHA-256 (64 hex digits: small files, symbolic links, anything uploaded before
/// chunk-list checksums) or a chunk-list checksum (66 hex digits starting `01`: large files
/// uploaded from an ``AssetFileScan`` made for one). A local file is compared with a hash by
/// hashing it the same way.
extension SyncFiles {
    /// The content hash of the file at `path`, of the kind of `expected` (a hex content hash;
    /// whole-content SHA-256 when it is nil, empty or of neither kind). A chunk-list hash is
    /// computed by a two-thread scan. Blocking.
    static func hashFile(_ path: String, like expected: String?) throws -> String {
        guard let expected, AssetChecksum.kind(ofHex: expected) == .chunkList else { return try hashFile(path) }
        let scan = try AssetFileScan.scan(URL(fileURLWithPath: path), identity: .chunkList)
        return scan.hexChecksum
    }

    /// ``contentHash(of:absolute:)`` of the kind of `expected` (see ``hashFile(_:like:)``).
    static func contentHash(of item: LocalItem, absolute: String, like expected: String?) throws -> String {
        guard item.stat.kind == .file else { return try contentHash(of: item, absolute: absolute) }
        return try hashFile(absolute, like: expected)
    }

    /// Of several hashes a file may be compared with (the vanished entries of a move), the one
    /// whose kind to hash a new file of `size` as: a chunk-list hash among those of entries of
    /// that size, else nil (whole-content SHA-256).
    static func hashKind(forSize size: Int64, among entries: [JournalEntry]) -> String? {
        entries.first { $0.stat.kind == .file && $0.stat.size == size && AssetChecksum.kind(ofHex: $0.contentHash) == .chunkList }?.contentHash
    }
}
