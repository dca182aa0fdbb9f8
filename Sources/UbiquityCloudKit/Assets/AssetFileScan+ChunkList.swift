// SPDX-License-Identifier: Apache-2.0
import Dispatch
import Foundation
import UbiquityWire
import UbiquityCore
#if canImport(Glibc)
import Glibc
#endif

/// The scan for a chunk-list checksum (``AssetChecksum/Kind/chunkList``): only the chunk
/// hashes are computed, so the file is split into two ranges hashed on two threads. The second
/// range starts at a chunk start of the previous list near the middle (or at the middle), as if a
/// chunk started there; the first range's chunker runs on past the split point until it cuts at
/// a place where the second range's chunker also started a chunk — from a common chunk start
/// FastCDC cuts the same bytes the same way, so from there the second range's chunks are the
/// ones a single pass would give. When the two never meet (content that FastCDC cuts only at
/// the maximum size, out of step), the first range's chunker goes on to the end: the result is
/// still exactly the one-thread list, only slower.
extension AssetFileScan {
    /// Files at least this large are split over two threads.
    static let parallelMinimumSize: Int64 = 8 << 20

    /// Scans the open file `fd` for a chunk-list checksum (see the extension's description).
    static func scanChunkList(_ fd: Int32, url: URL, before: FileStamp, previous: AssetChunkList?, pieceSize: Int,
                              threads: Int = 2, parallelMinimumSize: Int64 = AssetFileScan.parallelMinimumSize) throws -> AssetFileScan {
        let chunking = AssetChecksum.chunking
        let usable = previous.flatMap { $0.chunking == chunking ? $0 : nil }
        let piece = max(pieceSize, 1 << 16)
        let first = ChunkRangeScanner(fd: fd, path: url.path, chunker: AssetIncrementalChunker(parameters: chunking, previous: usable), piece: piece)
        var chunks: [AssetChunkRef]
        var reused: [Bool]
        if threads > 1, before.size >= parallelMinimumSize, before.size >= 2 {
            let split = splitPoint(size: before.size, previous: usable)
            let second = ChunkRangeScanner(fd: fd, path: url.path,
                                           chunker: AssetIncrementalChunker(parameters: chunking, previous: usable, startingAt: split), piece: piece)
            // each thread touches only its own scanner; `concurrentPerform` returns when both are done
            nonisolated(unsafe) var failure: (any Error)?
            let lock = NSLock()
            DispatchQueue.concurrentPerform(iterations: 2) { index in
                do {
                    if index == 0 { try first.advance { $0 >= split } } else { try second.advance { _ in false } }
                } catch {
                    lock.withLock { failure = error }
                }
            }
            if let failure { throw failure }
            var starts: [Int64: Int] = [:]
            starts.reserveCapacity(second.chunker.chunks.count)
            var offset = split
            for (index, chunk) in second.chunker.chunks.enumerated() {
                starts[offset] = index
                offset += Int64(chunk.size)
            }
            try first.advance { starts[$0] != nil }
            chunks = first.chunker.chunks
            reused = first.reused
            if !first.atEnd, let index = starts[first.chunker.position] {
                chunks += second.chunker.chunks[index...]
                reused += second.reused[index...]
            }
        } else {
            try first.advance { _ in false }
            chunks = first.chunker.chunks
            reused = first.reused
        }
        guard let after = FileStamp.of(url.path) else { throw UbiquityError(.notFound, "'\(url.path)' vanished while it was read") }
        var total: Int64 = 0
        var reusedChunks = 0
        var cutBytes: Int64 = 0
        for (chunk, wasReused) in zip(chunks, reused) {
            total += Int64(chunk.size)
            if wasReused { reusedChunks += 1 } else { cutBytes += Int64(chunk.size) }
        }
        let checksum = AssetChecksum.chunkList(chunks)
        let list = AssetChunkList(fileChecksum: checksum, size: total, chunking: chunking, chunks: chunks)
        return AssetFileScan(chunkList: list, before: before, after: after, reusedChunks: reusedChunks, cutBytes: cutBytes, previous: usable)
    }

    /// Where the second range starts: the previous list's chunk start nearest the middle (its
    /// chunks are likely still there, so the two ranges meet at once), else the middle.
    static func splitPoint(size: Int64, previous: AssetChunkList?) -> Int64 {
        let middle = size / 2
        guard let previous, previous.chunks.count > 2 else { return middle }
        var offset: Int64 = 0
        var best = middle
        var bestDistance = Int64.max
        for chunk in previous.chunks.dropLast() {
            offset += Int64(chunk.size)
            let distance = abs(offset - middle)
            if distance < bestDistance, offset > 0, offset < size {
                best = offset
                bestDistance = distance
            }
            if offset > middle { break }
        }
        return best
    }
}

/// One range of a parallel scan: reads the file from its chunker's position with `pread` and
/// cuts chunks until told to stop or the file ends. Used by one thread at a time.
final class ChunkRangeScanner: @unchecked Sendable {
    // @unchecked because: each scanner is driven by one thread at a time (the scan hands it to
    // one `concurrentPerform` iteration, then uses it again only after that returned).
    var chunker: AssetIncrementalChunker
    /// Per chunk, whether it was recognised from the previous list.
    private(set) var reused: [Bool] = []
    /// Whether the file's end was reached and every byte is in a chunk.
    private(set) var atEnd = false
    private let fd: Int32
    private let path: String
    private let piece: Int
    private let buffer: UnsafeMutableRawBufferPointer
    /// The file offset of `buffer[0]`, and how many bytes from there the buffer holds.
    private var bufferStart: Int64
    private var filled = 0
    private var endOfFile = false

    init(fd: Int32, path: String, chunker: AssetIncrementalChunker, piece: Int) {
        self.fd = fd
        self.path = path
        self.chunker = chunker
        self.piece = piece
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunker.window + piece, alignment: 64)
        bufferStart = chunker.position
    }

    deinit { buffer.deallocate() }

    /// Cuts chunks until `stop(position)` holds at a chunk start, or the file ends (blocking).
    func advance(until stop: (Int64) -> Bool) throws {
        let window = chunker.window
        while !atEnd && !stop(chunker.position) {
            var available = Int(bufferStart + Int64(filled) - chunker.position)
            if available < window && !endOfFile {
                try refill()
                available = Int(bufferStart + Int64(filled) - chunker.position)
            }
            let from = Int(chunker.position - bufferStart)
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[from..<from + available])
            let reusedBefore = chunker.reusedChunks
            guard chunker.next(bytes, atEnd: endOfFile) != nil else {
                atEnd = true
                break
            }
            reused.append(chunker.reusedChunks > reusedBefore)
            if endOfFile && chunker.position == bufferStart + Int64(filled) { atEnd = true }
        }
    }

    /// Moves the unread bytes to the front of the buffer and reads up to a piece after them.
    private func refill() throws {
        let keep = Int(bufferStart + Int64(filled) - chunker.position)
        let from = filled - keep
        if keep > 0 && from > 0 { memmove(buffer.baseAddress!, buffer.baseAddress! + from, keep) }
        bufferStart = chunker.position
        filled = keep
        let room = buffer.count - filled
        var got = 0
        while got < room {
            let count = pread(fd, buffer.baseAddress! + filled + got, room - got, off_t(bufferStart + Int64(filled + got)))
            if count < 0 {
                if errno == EINTR { continue }
                throw UbiquityError.posix("read", path: path)
            }
            if count == 0 {
                endOfFile = true
                break
            }
            got += count
        }
        filled += got
    }
}
