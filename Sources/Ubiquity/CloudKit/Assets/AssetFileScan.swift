// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
#if canImport(Glibc)
import Glibc
#endif

/// A file read once: cut into chunks (FastCDC), each chunk and the whole content hashed in the
/// same pass, with the file's stamp before and after the read. An upload given a scan
/// (``Asset/init(fileURL:scan:)``) does not read the file again to find its chunks, checks each
/// chunk it sends against the scan's hash, and refuses a result of other content
/// (`assetFileModified`) — so an upload made from a scan is the scanned content or nothing.
public struct AssetFileScan: Sendable, Hashable {
    /// The content's chunk list (whole hashes) with its checksum and size.
    public var chunkList: AssetChunkList
    /// The file's stamp when opened, and after the last byte was read.
    public var before: FileStamp, after: FileStamp

    /// The standard base64 SHA-256 of the content.
    public var fileChecksum: String { chunkList.fileChecksum }
    /// The content's size.
    public var size: Int64 { chunkList.size }
    /// The content's SHA-256 in lower-case hex.
    public var hexChecksum: String { Data(base64Encoded: chunkList.fileChecksum).map { Hex.encode($0) } ?? "" }
    /// Whether the file changed while it was read (identity, size or modification time): the
    /// scan may then describe a mix of two versions and must not be used.
    public var changedWhileRead: Bool { before.contentDiffers(from: after) }

    /// Makes a scan from its parts.
    public init(chunkList: AssetChunkList, before: FileStamp, after: FileStamp) {
        self.chunkList = chunkList
        self.before = before
        self.after = after
    }

    /// Reads the file at `url` once (blocking: call it off the cooperative pool), in
    /// `pieceSize` pieces: the chunk boundaries and chunk hashes on one thread while the whole
    /// checksum is computed on another.
    /// - Throws: `UbiquityError` (`notFound`, `io`) when the file cannot be opened or read, or
    ///   is not a regular file.
    public static func scan(_ url: URL, chunking: FastCDC.Parameters = .default, pieceSize: Int = 8 << 20) throws -> AssetFileScan {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw UbiquityError.posix("open", path: url.path) }
        defer { close(fd) }
        guard let before = FileStamp.of(descriptor: fd) else { throw UbiquityError.posix("fstat", path: url.path) }
        guard !before.isDirectory && !before.isSymbolicLink else { throw UbiquityError(.invalidArgument, "'\(url.path)' is not a regular file") }
        let scanner = AssetChunkScanner(parameters: chunking)  // the whole hash on a second thread
        let size = max(pieceSize, 1 << 16)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
        defer { buffer.deallocate() }
        var total: Int64 = 0
        while true {
            var filled = 0
            while filled < size {
                let got = read(fd, buffer.baseAddress! + filled, size - filled)
                if got < 0 {
                    if errno == EINTR { continue }
                    throw UbiquityError.posix("read", path: url.path)
                }
                if got == 0 { break }
                filled += got
            }
            if filled == 0 { break }
            scanner.scan(UnsafeRawBufferPointer(rebasing: buffer[..<filled]))
            total += Int64(filled)
            if filled < size { break }
        }
        let checksum = scanner.finish()
        guard let after = FileStamp.of(url.path) else { throw UbiquityError(.notFound, "'\(url.path)' vanished while it was read") }
        let list = AssetChunkList(fileChecksum: checksum, size: total, chunking: chunking, chunks: scanner.chunks.map(\.ref))
        return AssetFileScan(chunkList: list, before: before, after: after)
    }

    /// Where each chunk starts, with its reference.
    var spans: [AssetChunkSpan] {
        var offset: Int64 = 0
        return chunkList.chunks.map { chunk in
            defer { offset += Int64(chunk.size) }
            return AssetChunkSpan(ref: chunk, offset: offset)
        }
    }
}
