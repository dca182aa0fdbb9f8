// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOCore
import UbiquityWire
import UbiquityCore
#if canImport(Glibc)
import Glibc
#endif

/// A file opened for reading an asset from: its size when opened, read in slices with `pread`
/// off the cooperative pool.
final class AssetFile: Sendable {
    let url: URL
    let descriptor: Int32
    let size: Int64

    private init(url: URL, descriptor: Int32, size: Int64) {
        self.url = url
        self.descriptor = descriptor
        self.size = size
    }

    deinit { close(descriptor) }

    /// Opens `url` for reading.
    /// - Throws: ``CloudKitError`` `assetFileNotFound` when it cannot be opened.
    static func open(_ url: URL) async throws -> AssetFile {
        try await BlockingWork.run {
            let fd = Glibc.open(url.path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                throw CloudKitError(.assetFileNotFound, "cannot open the asset file \(url.path): \(String(cString: strerror(errno)))")
            }
            var info = stat()
            guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
                Glibc.close(fd)
                throw CloudKitError(.assetFileNotFound, "the asset file \(url.path) is not a regular file")
            }
            return AssetFile(url: url, descriptor: fd, size: Int64(info.st_size))
        }
    }

    /// Reads `count` bytes at `offset` into a new buffer (blocking).
    /// - Throws: `assetFileModified` when the file ends early (it shrank).
    func readNow(at offset: Int64, count: Int) throws -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: count)
        try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { target in
            var done = 0
            while done < count {
                let got = pread(descriptor, target.baseAddress! + done, count - done, off_t(offset) + off_t(done))
                if got < 0 {
                    if errno == EINTR { continue }
                    throw CloudKitError(.assetFileNotFound, "cannot read the asset file \(url.path): \(String(cString: strerror(errno)))")
                }
                if got == 0 { throw CloudKitError(.assetFileModified, "the asset file \(url.path) changed while it was being uploaded") }
                done += got
            }
            return count
        }
        return buffer
    }

    /// Reads `count` bytes at `offset` into a new buffer.
    func read(at offset: Int64, count: Int) async throws -> ByteBuffer {
        try await BlockingWork.run { try self.readNow(at: offset, count: count) }
    }

    /// Checks the file still has the size it had when opened.
    func checkUnchanged() async throws {
        let unchanged = try await BlockingWork.run { () -> Bool in
            var info = stat()
            return fstat(self.descriptor, &info) == 0 && Int64(info.st_size) == self.size
        }
        guard unchanged else { throw CloudKitError(.assetFileModified, "the asset file \(url.path) changed while it was being uploaded") }
    }

    /// The bytes of `range`, as an `AsyncSequence` of slices of at most `pieceSize` bytes read
    /// one at a time as the consumer asks (so a slow connection holds the reading back).
    func slices(_ range: Range<Int64>, pieceSize: Int, onPiece: @escaping @Sendable (Int) -> Void) -> AssetFileSlices {
        AssetFileSlices(file: self, range: range, pieceSize: pieceSize, onPiece: onPiece)
    }
}

/// A range of an ``AssetFile`` as `ByteBuffer`s, read on demand.
struct AssetFileSlices: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    let file: AssetFile
    let range: Range<Int64>
    let pieceSize: Int
    let onPiece: @Sendable (Int) -> Void

    struct AsyncIterator: AsyncIteratorProtocol {
        let file: AssetFile
        let end: Int64
        let pieceSize: Int
        let onPiece: @Sendable (Int) -> Void
        var offset: Int64

        mutating func next() async throws -> ByteBuffer? {
            guard offset < end else { return nil }
            let count = Int(Swift.min(Int64(pieceSize), end - offset))
            let buffer = try await file.read(at: offset, count: count)
            offset += Int64(count)
            onPiece(count)
            return buffer
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(file: file, end: range.upperBound, pieceSize: pieceSize, onPiece: onPiece, offset: range.lowerBound)
    }
}
