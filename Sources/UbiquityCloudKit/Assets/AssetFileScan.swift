// SPDX-License-Identifier: Apache-2.0
import Crypto
import Dispatch
import Foundation
import UbiquityWire
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

    /// The content's checksum (standard base64): the whole content's SHA-256, or its chunk-list
    /// checksum when scanned for one (``AssetChecksum``).
    public var fileChecksum: String { chunkList.fileChecksum }
    /// The content's size.
    public var size: Int64 { chunkList.size }
    /// The content's checksum in lower-case hex (64 digits, or 66 for a chunk-list checksum).
    public var hexChecksum: String { Data(base64Encoded: chunkList.fileChecksum).map { Hex.encode($0) } ?? "" }
    /// Whether the file changed while it was read (identity, size or modification time): the
    /// scan may then describe a mix of two versions and must not be used.
    public var changedWhileRead: Bool { before.contentDiffers(from: after) }

    /// How many chunks were recognised from the previous chunk list (hashed, not cut).
    public var reusedChunks: Int
    /// How many bytes FastCDC went over (the rest were recognised chunks).
    public var cutBytes: Int64

    /// The previous chunk list the scan was given (cut the same way), or nil: an upload from
    /// this scan sends its list relative to that version's, which the server holds
    /// (`docs/assets.md`, "Lists relative to a base"), and the whole list only when it does not.
    public var previous: AssetChunkList?

    /// Makes a scan from its parts.
    public init(chunkList: AssetChunkList, before: FileStamp, after: FileStamp, reusedChunks: Int = 0, cutBytes: Int64 = 0,
                previous: AssetChunkList? = nil) {
        self.chunkList = chunkList
        self.before = before
        self.after = after
        self.reusedChunks = reusedChunks
        self.cutBytes = cutBytes
        self.previous = previous
    }

    /// Reads the file at `url` once (blocking: call it off the cooperative pool), in
    /// `pieceSize` pieces: the whole checksum on one thread while another cuts and hashes the
    /// chunks. With the file's `previous` chunk list (as last uploaded or downloaded), chunks
    /// still in place are recognised by their hash and not cut again (``AssetIncrementalChunker``:
    /// the result is what a full FastCDC run gives, but only changed regions are cut).
    ///
    /// With `identity` ``AssetChecksum/Kind/chunkList`` (and the default chunking), the checksum
    /// is the chunk-list checksum, computed from the chunk hashes alone: no whole-content
    /// SHA-256, and the file is split over two threads by range (`AssetFileScan+ChunkList.swift`;
    /// the list is exactly the one-thread list).
    /// - Throws: `UbiquityError` (`notFound`, `io`) when the file cannot be opened or read, or
    ///   is not a regular file.
    public static func scan(_ url: URL, chunking: FastCDC.Parameters = .default, previous: AssetChunkList? = nil,
                            pieceSize: Int = 8 << 20, identity: AssetChecksum.Kind = .sha256) throws -> AssetFileScan {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw UbiquityError.posix("open", path: url.path) }
        defer { close(fd) }
        guard let before = FileStamp.of(descriptor: fd) else { throw UbiquityError.posix("fstat", path: url.path) }
        guard !before.isDirectory && !before.isSymbolicLink else { throw UbiquityError(.invalidArgument, "'\(url.path)' is not a regular file") }
        _ = posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL)
        if identity == .chunkList && chunking == AssetChecksum.chunking {
            return try scanChunkList(fd, url: url, before: before, previous: previous, pieceSize: pieceSize)
        }
        let pass = ScanPass(chunker: AssetIncrementalChunker(parameters: chunking, previous: previous))
        let window = pass.chunker.window
        let piece = max(pieceSize, 1 << 16)
        // Two buffers: the next piece is read into one while the other is hashed and cut (the
        // read — a copy out of the page cache — is then off the critical path). Each holds the
        // bytes of an unfinished chunk (fewer than `window`) just before `window`, then a piece.
        let buffers = (0..<2).map { _ in UnsafeMutableRawBufferPointer.allocate(byteCount: window + piece, alignment: 64) }
        defer { buffers.forEach { $0.deallocate() } }
        var total: Int64 = 0
        var held = 0  // bytes before `window` in the current buffer not yet in a chunk
        var current = 0
        // its own (serial, so overcommitting) queue: the global ones may be busy with the hashing
        let reader = DispatchQueue(label: "ubiquity.asset-scan.read-ahead")
        var filled = try readPiece(fd, into: buffers[0], at: window, count: piece, path: url.path)
        while true {
            let atEnd = filled < piece
            total += Int64(filled)
            let buffer = buffers[current]
            let fresh = UnsafeRawBufferPointer(rebasing: buffer[window..<window + filled])
            let region = UnsafeRawBufferPointer(rebasing: buffer[window - held..<window + filled])
            var next: Result<Int, any Error> = .success(0)
            let used: Int
            if atEnd {
                used = pass.run(whole: fresh, chunks: region, atEnd: true)
            } else {
                // read ahead on another thread meanwhile (only the other buffer is written)
                nonisolated(unsafe) let other = buffers[1 - current]
                nonisolated(unsafe) var readAhead: Result<Int, any Error> = .success(0)
                let group = DispatchGroup()
                reader.async(group: group) {
                    readAhead = Result { try AssetFileScan.readPiece(fd, into: other, at: window, count: piece, path: url.path) }
                }
                used = pass.run(whole: fresh, chunks: region, atEnd: false)
                group.wait()
                next = readAhead
            }
            if atEnd { break }
            held = region.count - used
            precondition(held <= window, "an unfinished chunk is shorter than the window")
            let other = buffers[1 - current]
            if held > 0 { memcpy(other.baseAddress! + window - held, buffer.baseAddress! + window + filled - held, held) }
            current = 1 - current
            filled = try next.get()
        }
        let checksum = Data(pass.whole.finalize()).base64EncodedString()
        guard let after = FileStamp.of(url.path) else { throw UbiquityError(.notFound, "'\(url.path)' vanished while it was read") }
        let list = AssetChunkList(fileChecksum: checksum, size: total, chunking: chunking, chunks: pass.chunker.chunks)
        return AssetFileScan(chunkList: list, before: before, after: after, reusedChunks: pass.chunker.reusedChunks,
                             cutBytes: pass.chunker.cutBytes, previous: previous.flatMap { $0.chunking == chunking ? $0 : nil })
    }

    /// Reads up to `count` bytes at the file position into `buffer` from `offset`; fewer only at
    /// the end of the file (blocking).
    private static func readPiece(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int, count: Int, path: String) throws -> Int {
        var filled = 0
        while filled < count {
            let got = read(fd, buffer.baseAddress! + offset + filled, count - filled)
            if got < 0 {
                if errno == EINTR { continue }
                throw UbiquityError.posix("read", path: path)
            }
            if got == 0 { break }
            filled += got
        }
        return filled
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

/// One scan's state: the whole hash (one thread) and the chunker (another).
private final class ScanPass: @unchecked Sendable {
    // @unchecked because: used by one `scan` call; inside ``run(whole:chunks:atEnd:)`` the two
    // halves touch disjoint state (`whole` / `chunker`) and `concurrentPerform` returns only
    // when both are done.
    var whole = SHA256()
    var chunker: AssetIncrementalChunker

    init(chunker: AssetIncrementalChunker) { self.chunker = chunker }

    /// Hashes `fresh` into the whole checksum while cutting the chunks that `chunks` (which
    /// ends with `fresh`) completes; returns how many bytes of `chunks` are now in chunks.
    func run(whole fresh: UnsafeRawBufferPointer, chunks region: UnsafeRawBufferPointer, atEnd: Bool) -> Int {
        guard fresh.count >= 1 << 20 else {
            whole.update(bufferPointer: fresh)
            return cut(region, atEnd: atEnd)
        }
        // both halves only read the buffer, which outlives the call
        nonisolated(unsafe) let sharedFresh = fresh, sharedRegion = region
        nonisolated(unsafe) var used = 0
        DispatchQueue.concurrentPerform(iterations: 2) { half in
            if half == 0 { self.whole.update(bufferPointer: sharedFresh) } else { used = self.cut(sharedRegion, atEnd: atEnd) }
        }
        return used
    }

    private func cut(_ region: UnsafeRawBufferPointer, atEnd: Bool) -> Int {
        var offset = 0
        while atEnd ? offset < region.count : region.count - offset >= chunker.window {
            guard let length = chunker.next(UnsafeRawBufferPointer(rebasing: region[offset...]), atEnd: atEnd) else { break }
            offset += length
        }
        return offset
    }
}
