// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire
import UbiquityCore

/// An asset field's value (`CKAsset`): a file to upload, or the server's description of stored
/// content (checksum, size and, on fetch, where to download it).
///
/// To attach a file, make the asset with ``init(fileURL:)``: saving the record through
/// ``CloudDatabase`` uploads the file first (`assets/upload`, then ``AssetTransfer``). A fetched
/// record's assets carry a ``downloadURL``; ``download(to:)`` fetches the content.
///
/// ```swift
/// record["image"] = .asset(Asset(fileURL: photoURL))
/// let saved = try await database.save(record)
/// let local = try await saved["image"]?.assetValue?.download(to: cacheFolder.appending(path: "photo.jpg"))
/// ```
public struct Asset: Sendable, Hashable {
    /// The local file to upload (set by ``init(fileURL:)``; after ``download(to:)``, the
    /// downloaded file). Never sent to the server.
    public var fileURL: URL?
    /// The content's checksum.
    public var fileChecksum: String?
    /// The content's size in bytes.
    public var size: Int64?
    /// Private database: the checksum of the encrypted content.
    public var referenceChecksum: String?
    /// Private database: the key wrapping the content's encryption key.
    public var wrappingKey: String?
    /// The upload receipt (needed when saving a freshly uploaded asset).
    public var receipt: String?
    /// Where to download the content (on fetch); `${f}` stands for a file name.
    public var downloadURL: String?
    /// The file's content as read once before the upload (``init(fileURL:scan:)``): the upload
    /// then uses its chunks instead of reading the file to find them, and refuses to produce
    /// other content. Never sent to the server.
    public var fileScan: AssetFileScan?

    /// Makes an asset value.
    public init(fileChecksum: String? = nil, size: Int64? = nil, referenceChecksum: String? = nil, wrappingKey: String? = nil,
                receipt: String? = nil, downloadURL: String? = nil) {
        self.fileChecksum = fileChecksum
        self.size = size
        self.referenceChecksum = referenceChecksum
        self.wrappingKey = wrappingKey
        self.receipt = receipt
        self.downloadURL = downloadURL
    }

    /// An asset for a local file (`CKAsset(fileURL:)`): uploaded when the record holding it is
    /// saved. The file must stay unchanged until then.
    public init(fileURL: URL) {
        self.fileURL = fileURL
    }

    /// An asset for a local file already read into `scan` (``AssetFileScan/scan(_:chunking:pieceSize:)``):
    /// the upload sends the scanned content or fails with `assetFileModified` (each chunk sent
    /// is checked against its scanned hash, and the server's checksum against the scan's), so
    /// the file need not be copied aside to keep it still.
    public init(fileURL: URL, scan: AssetFileScan) {
        self.fileURL = fileURL
        self.fileScan = scan
    }

    /// Whether saving the record must upload ``fileURL`` first: a file and no receipt yet.
    var needsUpload: Bool { fileURL != nil && receipt == nil && downloadURL == nil }

    /// Downloads the content to `destination` (replaced if it exists), checking it against
    /// ``fileChecksum``, and returns `destination`.
    /// - Throws: ``CloudKitError`` `assetNotAvailable` when the asset has no ``downloadURL``
    ///   (it was not fetched from a server) or its content does not match; the server's error
    ///   otherwise (`unknownItem`: the content is gone; `permissionFailure`: the URL expired —
    ///   fetch the record again).
    @discardableResult
    public func download(to destination: URL, transfer: AssetTransfer = AssetTransfer(),
                         progress: (@Sendable (AssetTransferProgress) -> Void)? = nil) async throws -> URL {
        guard let downloadURL else {
            throw CloudKitError(.assetNotAvailable, "the asset has no downloadURL: fetch the record holding it from the server first")
        }
        return try await transfer.download(from: downloadURL, to: destination, expectedChecksum: fileChecksum, progress: progress).fileURL
    }
}

extension Asset {
    var wire: WireAsset {
        WireAsset(fileChecksum: fileChecksum, size: size, referenceChecksum: referenceChecksum, wrappingKey: wrappingKey,
                  receipt: receipt, downloadURL: downloadURL)
    }

    init(wire: WireAsset) {
        self.init(fileChecksum: wire.fileChecksum, size: wire.size, referenceChecksum: wire.referenceChecksum,
                  wrappingKey: wire.wrappingKey, receipt: wire.receipt, downloadURL: wire.downloadURL)
    }
}
