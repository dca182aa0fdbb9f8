// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import UbiquityWire
import UbiquityCore
#if canImport(Glibc)
import Glibc
#endif

/// Computes a content's checksum of either kind (``AssetChecksum/Kind``) from its bytes in
/// order, piece by piece: the whole-content SHA-256, or the chunk-list checksum (FastCDC with
/// ``AssetChecksum/chunking``, each chunk's SHA-256 fed to the list's hash as it is cut, so
/// memory does not grow with the content). Used wherever content is checked against a
/// `fileChecksum` or a sync content hash it did not compute itself (downloads, the sync engine's
/// checks of a written or local file); a large local file is better read with ``AssetFileScan``,
/// which splits the chunk-list work over two threads.
public struct AssetContentHasher: Sendable {
    /// The kind of checksum computed.
    public let kind: AssetChecksum.Kind
    private var whole = SHA256()
    private var list = SHA256()
    private var chunkHash = SHA256()
    private var chunker = FastCDC(parameters: AssetChecksum.chunking)
    /// One chunk's entry of the list's hashed bytes (reused).
    private var entry: [UInt8] = []

    /// A hasher at the start of the content.
    public init(kind: AssetChecksum.Kind) {
        self.kind = kind
        if kind == .chunkList { AssetChecksum.chunkListTag.withUnsafeBytes { list.update(bufferPointer: $0) } }
    }

    /// A hasher of the kind of `checksum` (a `fileChecksum`), whole-content SHA-256 when it is
    /// neither kind or nil.
    public init(like checksum: String?) {
        self.init(kind: checksum.flatMap { AssetChecksum.kind(of: $0) } ?? .sha256)
    }

    /// Feeds the next bytes of the content.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard kind == .chunkList else {
            whole.update(bufferPointer: bytes)
            return
        }
        var offset = 0
        while offset < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            let before = chunker.pendingCount
            guard let cut = chunker.boundary(in: rest) else {
                chunkHash.update(bufferPointer: rest)
                return
            }
            chunkHash.update(bufferPointer: UnsafeRawBufferPointer(rebasing: rest[..<cut]))
            endChunk(size: before + cut)
            offset += cut
        }
    }

    private mutating func endChunk(size: Int) {
        let digest = chunkHash.finalize()
        chunkHash = SHA256()
        entry.removeAll(keepingCapacity: true)
        AssetChecksum.appendEntry(hash: Array(digest), size: size, to: &entry)
        entry.withUnsafeBytes { list.update(bufferPointer: $0) }
    }

    /// Ends the content: its checksum (standard base64; ``AssetChecksum``).
    public mutating func finalize() -> String {
        guard kind == .chunkList else { return Data(whole.finalize()).base64EncodedString() }
        if let last = chunker.finish() { endChunk(size: last) }
        return Data([AssetChecksum.chunkListVersion] + Array(list.finalize())).base64EncodedString()
    }

    /// The checksum of kind `kind` of the file at `path`, read once in 1 MiB pieces
    /// (blocking). A large file's chunk-list checksum is quicker with ``AssetFileScan``.
    /// - Throws: `UbiquityError` when it cannot be opened or read.
    public static func checksum(ofFile path: String, kind: AssetChecksum.Kind) throws -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw UbiquityError.posix("open", path: path) }
        defer { close(fd) }
        var hasher = AssetContentHasher(kind: kind)
        let size = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = read(fd, buffer.baseAddress, size)
            if count < 0 {
                if errno == EINTR { continue }
                throw UbiquityError.posix("read", path: path)
            }
            if count == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
        return hasher.finalize()
    }
}
