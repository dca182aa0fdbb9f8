// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import UbiquityWire
import UbiquityCore
#if canImport(Glibc)
import Glibc
#endif

/// The file a chunk-level download assembles: written at any offset (`pwrite`, so ranges
/// arriving in parallel may write at once), then read back in order to check its checksum.
final class AssetDeltaFile: Sendable {
    let path: String
    let descriptor: Int32

    init(path: String, size: Int64) throws {
        self.path = path
        descriptor = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw CloudKitError(.internalError, "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        guard ftruncate(descriptor, off_t(size)) == 0 else {
            close(descriptor)
            throw CloudKitError(.internalError, "cannot size \(path) to \(size) bytes: \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(descriptor) }

    /// Writes `bytes` at `offset` (blocking).
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        try AssetDownloadFile.write(bytes, to: descriptor, at: offset, path: path)
    }

    /// The checksum of `kind` (standard base64, ``AssetChecksum``) of the first `size` bytes,
    /// read in `pieceSize` pieces (blocking).
    func checksum(size: Int64, pieceSize: Int, kind: AssetChecksum.Kind = .sha256) throws -> String {
        var hash = AssetContentHasher(kind: kind)
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: pieceSize, alignment: 16)
        defer { scratch.deallocate() }
        var offset: Int64 = 0
        while offset < size {
            let count = Int(min(Int64(pieceSize), size - offset))
            let got = pread(descriptor, scratch.baseAddress!, count, off_t(offset))
            if got < 0 {
                if errno == EINTR { continue }
                throw CloudKitError(.internalError, "cannot read \(path): \(String(cString: strerror(errno)))")
            }
            guard got > 0 else { throw CloudKitError(.internalError, "\(path) ended early") }
            hash.update(UnsafeRawBufferPointer(rebasing: scratch[..<got]))
            offset += Int64(got)
        }
        return hash.finalize()
    }

    func sync() { fsync(descriptor) }

    /// Whether each chunk at its offset hashes to its (possibly shortened) hex hash (blocking).
    func checkChunks(_ chunks: [(offset: Int64, chunk: AssetChunkRef)]) throws -> Bool {
        let largest = chunks.map(\.chunk.size).max() ?? 0
        guard largest > 0 else { return true }
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: largest, alignment: 16)
        defer { scratch.deallocate() }
        for (offset, chunk) in chunks {
            var done = 0
            while done < chunk.size {
                let got = pread(descriptor, scratch.baseAddress! + done, chunk.size - done, off_t(offset) + off_t(done))
                if got < 0 {
                    if errno == EINTR { continue }
                    throw CloudKitError(.internalError, "cannot read \(path): \(String(cString: strerror(errno)))")
                }
                guard got > 0 else { return false }
                done += got
            }
            let hash = Hex.encode(SHA256.hash(data: UnsafeRawBufferPointer(rebasing: scratch[..<chunk.size])))
            guard hash.hasPrefix(chunk.hash) else { return false }
        }
        return true
    }
}

/// Why a chunk-level download gave way to a whole one (never shown to callers: they get the
/// whole download's result or error).
struct AssetDeltaFallback: Error, CustomStringConvertible {
    var description: String
}

/// The plan of a chunk-level download: the asset's chunks with their offsets, which of them the
/// basis supplied, and the byte ranges still to fetch. A value type, tested without I/O.
struct AssetDeltaPlan: Sendable {
    /// The asset's chunk list.
    let list: AssetChunkList
    /// Where each chunk starts in the asset.
    let offsets: [Int64]
    /// The chunks not yet filled, by (possibly shortened) hash.
    private var unfilled: [String: [Int]] = [:]
    /// Bytes filled from the basis.
    private(set) var copiedBytes: Int64 = 0

    init(list: AssetChunkList) {
        self.list = list
        var offsets: [Int64] = []
        offsets.reserveCapacity(list.chunks.count)
        var offset: Int64 = 0
        for (index, chunk) in list.chunks.enumerated() {
            offsets.append(offset)
            offset += Int64(chunk.size)
            unfilled[chunk.hash, default: []].append(index)
        }
        self.offsets = offsets
    }

    /// The asset offsets a basis chunk (its whole SHA-256 in hex and size) fills; they count as
    /// filled from now on.
    mutating func fill(hash: String, size: Int) -> [Int64] {
        let key = String(hash.prefix(list.hashBytes * 2))
        guard let indexes = unfilled[key] else { return [] }
        let matching = indexes.filter { list.chunks[$0].size == size }
        guard !matching.isEmpty else { return [] }
        let rest = indexes.filter { list.chunks[$0].size != size }
        unfilled[key] = rest.isEmpty ? nil : rest
        copiedBytes += Int64(size) * Int64(matching.count)
        return matching.map { offsets[$0] }
    }

    /// The indexes of the chunks not filled, in order.
    var missingIndexes: [Int] { unfilled.values.joined().sorted() }

    /// The byte ranges of the chunks not filled, adjacent ones merged, each at most `limit`
    /// bytes long.
    func missingRanges(limit: Int64) -> [Range<Int64>] {
        let indexes = unfilled.values.joined().sorted()
        var ranges: [Range<Int64>] = []
        for index in indexes {
            let start = offsets[index], end = start + Int64(list.chunks[index].size)
            if let last = ranges.last, last.upperBound == start {
                ranges[ranges.count - 1] = last.lowerBound..<end
            } else {
                ranges.append(start..<end)
            }
        }
        return ranges.flatMap { range -> [Range<Int64>] in
            stride(from: range.lowerBound, to: range.upperBound, by: Int(max(limit, 1))).map { $0..<min($0 + max(limit, 1), range.upperBound) }
        }
    }
}

/// The local, older version of an asset's content that a chunk-level download may reuse
/// (``AssetTransfer/download(from:to:expectedChecksum:reusing:progress:)``), with what is known
/// about it.
public struct AssetDownloadBasis: Sendable {
    /// The file; only read.
    public var fileURL: URL
    /// The file's chunk list when known (kept from when it was last uploaded or downloaded): then
    /// the file is not read to cut it, the chunks the new version shares are copied in the kernel
    /// (`copy_file_range`), and the result's whole checksum is not recomputed when
    /// ``isUnchanged`` holds before and after (each fetched chunk is still checked).
    public var chunkList: AssetChunkList?
    /// Whether the file is still the content ``chunkList`` describes (e.g. its inode, size,
    /// modification and change times are still those recorded with the list); called before
    /// and after it is read.
    public var isUnchanged: @Sendable () -> Bool

    /// A basis; without a `chunkList` it is cut as the server cut the asset, and the result is
    /// checked against the asset's checksum.
    public init(fileURL: URL, chunkList: AssetChunkList? = nil, isUnchanged: @escaping @Sendable () -> Bool = { false }) {
        self.fileURL = fileURL
        self.chunkList = chunkList
        self.isUnchanged = isUnchanged
    }
}

extension AssetTransfer {
    /// The longest range one request of a chunk-level download asks for (longer runs of missing
    /// chunks are split, so that they arrive in parallel).
    static let deltaRangeLimit: Int64 = 8 << 20

    /// Downloads an asset to `fileURL` reusing the bytes of `basis`, an older version of the
    /// same file: the server's chunk list of the asset (`?manifest=1` on the download URL, see
    /// `docs/assets.md`, "Chunk-level downloads") is compared with the basis cut the same way;
    /// matching chunks are copied from the basis, the others fetched with ranged `GET`s (adjacent
    /// ones in one range, a few ranges at once). The assembled file is checked against the
    /// asset's checksum before it is renamed into place.
    ///
    /// Falls back to a whole download (``download(from:to:expectedChecksum:progress:)``) when
    /// `basis` is nil, missing or empty, when the server does not offer chunk lists (an older
    /// server or iCloud), or when anything does not check out — a basis that changed while it
    /// was read, a chunk list that does not describe the content. The result tells which
    /// happened (``AssetDownloadResult/usedBasis``) and how many bytes came from where.
    /// - Parameters:
    ///   - basis: the local, older version; only read. It may be `fileURL` itself.
    /// - Throws: what ``download(from:to:expectedChecksum:progress:)`` throws.
    public func download(from downloadURL: String, to fileURL: URL, expectedChecksum: String? = nil, basis: URL?,
                         progress: (@Sendable (AssetTransferProgress) -> Void)? = nil) async throws -> AssetDownloadResult {
        try await download(from: downloadURL, to: fileURL, expectedChecksum: expectedChecksum, reusing: basis.map { AssetDownloadBasis(fileURL: $0) },
                           progress: progress)
    }

    /// As ``download(from:to:expectedChecksum:basis:progress:)``, with what is known about the
    /// basis (``AssetDownloadBasis``): given its chunk list, the basis is not read to cut it,
    /// and the assembled file's checksum is only recomputed when the basis may have changed.
    /// The result carries the new content's chunk list (``AssetDownloadResult/chunkList``) when
    /// it was assembled, to keep for the next download.
    /// - Throws: what ``download(from:to:expectedChecksum:progress:)`` throws.
    public func download(from downloadURL: String, to fileURL: URL, expectedChecksum: String? = nil, reusing basis: AssetDownloadBasis?,
                         progress: (@Sendable (AssetTransferProgress) -> Void)? = nil) async throws -> AssetDownloadResult {
        guard let basis else { return try await download(from: downloadURL, to: fileURL, expectedChecksum: expectedChecksum, progress: progress) }
        let name = CloudKitHTTPRequest.percentEncode(fileURL.lastPathComponent)
        guard let url = URL(string: downloadURL.replacingOccurrences(of: "${f}", with: name)) else {
            throw CloudKitError(.invalidArguments, "\(downloadURL) is not a URL")
        }
        let received = TransferCounter()
        do {
            return try await deltaDownload(url, to: fileURL, expectedChecksum: expectedChecksum, basis: basis, received: received,
                                           report: progress ?? { _ in })
        } catch let error as CloudKitError where error.code == .operationCancelled {
            throw error
        } catch is CancellationError {
            throw CloudKitError(.operationCancelled, "the asset transfer was cancelled")
        } catch {
            // Anything else: the whole download (which reports the server's errors as usual).
            var result = try await download(from: downloadURL, to: fileURL, expectedChecksum: expectedChecksum, progress: progress)
            result.bytesReceived += received.total
            return result
        }
    }

    /// The chunk list of the asset at `downloadURL` (`?manifest=1`, hashes cut to `hashBytes`
    /// bytes), or nil when the server does not offer chunk lists. A synced file keeps it, so that
    /// a later chunk-level download need not read the file to cut it.
    /// - Throws: ``CloudKitError`` `invalidArguments` for a URL that is not one; network errors.
    public func chunkList(from downloadURL: String, hashBytes: Int = 12) async throws -> AssetChunkList? {
        guard let url = URL(string: downloadURL.replacingOccurrences(of: "${f}", with: "content")) else {
            throw CloudKitError(.invalidArguments, "\(downloadURL) is not a URL")
        }
        return try await chunkList(url, received: TransferCounter(), hashBytes: hashBytes)
    }

    /// The chunk list of the asset at `url`, or nil when the server does not offer one. With a
    /// `base` (the list of an older version this side holds, e.g. the basis's kept list), the
    /// server may send the list relative to it (`docs/assets.md`, "Lists relative to a base"):
    /// a few hundred bytes instead of ~350 KB for 1 GiB. A relative answer that does not
    /// rebuild to the server's list is asked again whole.
    func chunkList(_ url: URL, received: TransferCounter, hashBytes: Int = 12, base: AssetChunkList? = nil) async throws -> AssetChunkList? {
        let usable = base.flatMap { base -> AssetChunkList? in
            guard base.hashBytes >= hashBytes, !base.chunks.isEmpty, AssetChecksum.kind(of: base.fileChecksum) != nil else { return nil }
            return base
        }
        if let usable {
            let hex = Hex.encode(Data(base64Encoded: usable.fileChecksum) ?? Data())
            if let json = try await chunkListJSON(url, received: received, items: [URLQueryItem(name: "base", value: hex)], hashBytes: hashBytes),
               let list = try? AssetChunkList(json: json, base: usable) {
                return list
            }
        }
        guard let json = try await chunkListJSON(url, received: received, items: [], hashBytes: hashBytes) else { return nil }
        return try? AssetChunkList(json: json)
    }

    /// The JSON of `GET url?manifest=1&hashBytes=N` plus `items`, or nil when the server does
    /// not answer with JSON (no extension).
    private func chunkListJSON(_ url: URL, received: TransferCounter, items extra: [URLQueryItem], hashBytes: Int) async throws -> JSONValue? {
        var components = URLComponents(url: url, resolvingAgainstBaseURL: true)
        let items = components?.queryItems ?? []
        components?.queryItems = items + [URLQueryItem(name: "manifest", value: "1"), URLQueryItem(name: "hashBytes", value: "\(hashBytes)")] + extra
        guard let manifestURL = components?.url else { return nil }
        var request = HTTPClientRequest(url: manifestURL.absoluteString)
        request.method = .GET
        // A server without the extension answers with the content: one byte of it.
        request.headers.add(name: "Range", value: "bytes=0-0")
        request.headers.add(name: "Accept", value: "application/json")
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, timeout: .seconds(120))
        } catch is CancellationError {
            throw CloudKitError(.operationCancelled, "the asset transfer was cancelled")
        }
        let type = response.headers.first(name: "Content-Type") ?? ""
        guard response.status.code == 200, type.hasPrefix("application/json") else { return nil }
        let body = try await response.body.collect(upTo: 64 << 20)
        received.add(Int64(body.readableBytes))
        return try? JSONValue.parse(Data(body.readableBytesView))
    }

    private func deltaDownload(_ url: URL, to fileURL: URL, expectedChecksum: String?, basis: AssetDownloadBasis, received: TransferCounter,
                               report: @escaping @Sendable (AssetTransferProgress) -> Void) async throws -> AssetDownloadResult {
        guard let list = try await chunkList(url, received: received, base: basis.chunkList) else {
            throw AssetDeltaFallback(description: "the server offers no chunk list")
        }
        if let expectedChecksum, expectedChecksum != list.fileChecksum {
            throw AssetDeltaFallback(description: "the chunk list is of other content")
        }
        guard list.size > 0 else { throw AssetDeltaFallback(description: "an empty asset") }
        let source = try await AssetFile.open(basis.fileURL)
        guard source.size > 0 else { throw AssetDeltaFallback(description: "an empty basis") }

        let folder = fileURL.deletingLastPathComponent().path
        let temporary = "\(folder)/.\(fileURL.lastPathComponent).download-\(UUID().uuidString.prefix(8))"
        let size = list.size
        let file = try await BlockingWork.run { try AssetDeltaFile(path: temporary, size: size) }
        do {
            var plan = AssetDeltaPlan(list: list)
            let piece = options.pieceSize * 8
            // Whether the basis is proven to be the content its known chunk list describes
            // (then the assembled file needs no whole checksum: each fetched chunk is checked).
            var proven = false
            var fromKnownList = false
            if let known = basis.chunkList, known.size == source.size, known.chunking == list.chunking, known.hashBytes >= list.hashBytes,
               basis.isUnchanged() {
                // 1. From the basis's known chunk list: no read to cut it; the shared chunks are
                // copied in the kernel, adjacent ones as one run.
                var runs: [(from: Int64, to: Int64, count: Int64)] = []
                var at: Int64 = 0
                for chunk in known.chunks {
                    for target in plan.fill(hash: chunk.hash, size: chunk.size) {
                        if let last = runs.last, last.from + last.count == at, last.to + last.count == target {
                            runs[runs.count - 1].count += Int64(chunk.size)
                        } else {
                            runs.append((at, target, Int64(chunk.size)))
                        }
                    }
                    at += Int64(chunk.size)
                }
                let copies = runs
                try await BlockingWork.run {
                    for run in copies {
                        try FileRangeCopy.copy(from: source.descriptor, at: run.from, to: file.descriptor, at: run.to, count: run.count)
                    }
                }
                proven = basis.isUnchanged()
                fromKnownList = true
                report(AssetTransferProgress(phase: .downloading, completedBytes: plan.copiedBytes, totalBytes: size))
            }
            // 1. Otherwise cut the basis as the server cut the asset; copy each chunk the asset has.
            let scanner = AssetChunkScanner(parameters: list.chunking, wholeChecksum: false)
            var offset: Int64 = fromKnownList ? source.size : 0
            var seen = 0
            while offset < source.size {
                try Task.checkCancellation()
                let count = Int(min(Int64(piece), source.size - offset))
                let at = offset
                let last = at + Int64(count) >= source.size
                plan = try await BlockingWork.run { [plan, seen] in
                    var plan = plan
                    let buffer = try source.readNow(at: at, count: count)
                    scanner.scan(buffer)
                    if last { _ = scanner.finish() }
                    let chunks = scanner.chunks
                    for span in chunks[seen...] {
                        let targets = plan.fill(hash: span.ref.hash, size: span.ref.size)
                        guard !targets.isEmpty else { continue }
                        let start = Int(span.offset - at)
                        let bytes: ByteBuffer
                        if start >= 0 && start + span.ref.size <= buffer.readableBytes {
                            bytes = buffer.getSlice(at: buffer.readerIndex + start, length: span.ref.size)!
                        } else {
                            bytes = try source.readNow(at: span.offset, count: span.ref.size)  // began in the previous piece
                        }
                        try bytes.withUnsafeReadableBytes { raw in
                            for target in targets { try file.write(raw, at: target) }
                        }
                    }
                    return plan
                }
                seen = scanner.chunks.count
                offset += Int64(count)
                report(AssetTransferProgress(phase: .downloading, completedBytes: plan.copiedBytes, totalBytes: size))
            }
            let copied = plan.copiedBytes

            // 2. Fetch the rest, a few ranges at once.
            let fetched = TransferCounter()
            let ranges = plan.missingRanges(limit: Self.deltaRangeLimit)
            let etag = "\"\(list.fileChecksum)\""
            try await withThrowingTaskGroup(of: Void.self) { group in
                var next = 0
                func start(_ range: Range<Int64>) {
                    group.addTask {
                        try await self.fetchRange(range, of: url, size: size, etag: etag, into: file, received: received) { count in
                            let done = fetched.add(Int64(count))
                            report(AssetTransferProgress(phase: .downloading, completedBytes: copied + done, totalBytes: size))
                        }
                    }
                }
                let width = max(1, options.concurrentChunkUploads)
                while next < min(width, ranges.count) {
                    start(ranges[next])
                    next += 1
                }
                while try await group.next() != nil {
                    if next < ranges.count {
                        start(ranges[next])
                        next += 1
                    }
                }
            }

            // 3. Check the whole (or, from a basis proven unchanged, each fetched chunk), then
            // put it in place.
            let sync = options.syncDownloadedFiles
            let pieceSize = piece
            let fetchedChunks = proven ? plan.missingIndexes.map { (offset: plan.offsets[$0], chunk: list.chunks[$0]) } : []
            let checkWhole = !proven
            let kind = AssetChecksum.kind(of: list.fileChecksum) ?? .sha256
            let checksum = try await BlockingWork.run { () -> String in
                let checksum: String
                if checkWhole {
                    if kind == .chunkList {
                        // the chunk hashes on two threads, the list proposing each chunk (no cutting where it holds)
                        let scan = try AssetFileScan.scan(URL(fileURLWithPath: file.path), previous: list, identity: .chunkList)
                        checksum = scan.size == size ? scan.fileChecksum : ""
                    } else {
                        checksum = try file.checksum(size: size, pieceSize: pieceSize, kind: kind)
                    }
                } else {
                    checksum = try file.checkChunks(fetchedChunks) ? list.fileChecksum : ""
                }
                if sync { file.sync() }
                return checksum
            }
            guard checksum == list.fileChecksum else {
                throw AssetDeltaFallback(description: "the assembled file does not match the checksum (the basis changed while read, or the chunk list is wrong)")
            }
            try await BlockingWork.run {
                guard rename(temporary, fileURL.path) == 0 else {
                    throw CloudKitError(.internalError, "cannot move the download to \(fileURL.path): \(String(cString: strerror(errno)))")
                }
            }
            report(AssetTransferProgress(phase: .downloading, completedBytes: size, totalBytes: size))
            return AssetDownloadResult(fileURL: fileURL, size: size, fileChecksum: checksum, bytesReceived: received.total, resumptions: 0,
                                       bytesCopied: copied, usedBasis: true, chunkList: list, basisScanned: !fromKnownList)
        } catch {
            _ = try? await BlockingWork.run { unlink(temporary) }
            throw error
        }
    }

    /// Fetches `range` of the asset into `file` at the same offsets, resuming after a broken
    /// connection. Anything but the 206 asked for (the content changed: `If-Range`) is a fallback.
    private func fetchRange(_ range: Range<Int64>, of url: URL, size: Int64, etag: String, into file: AssetDeltaFile, received: TransferCounter,
                            onBytes: @escaping @Sendable (Int) -> Void) async throws {
        let components = options.requestTimeout.components
        let timeout = TimeAmount.nanoseconds(components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000)
        var position = range.lowerBound
        var failures = 0
        while position < range.upperBound {
            let before = position
            var request = HTTPClientRequest(url: url.absoluteString)
            request.method = .GET
            request.headers.add(name: "Range", value: "bytes=\(position)-\(range.upperBound - 1)")
            request.headers.add(name: "If-Range", value: etag)
            do {
                let response: HTTPClientResponse
                do {
                    response = try await client.execute(request, timeout: timeout)
                } catch is CancellationError {
                    throw CloudKitError(.operationCancelled, "the asset transfer was cancelled")
                } catch {
                    throw HTTPClientTransport.classify(error, url: url)
                }
                let contentRange = response.headers.first(name: "Content-Range") ?? ""
                guard response.status.code == 206, contentRange == "bytes \(position)-\(range.upperBound - 1)/\(size)" else {
                    if response.status.code >= 500 {
                        throw CloudKitError.http(status: Int(response.status.code), body: Data())
                    }
                    throw AssetDeltaFallback(description: "the server answered a range with \(response.status.code) `\(contentRange)`")
                }
                do {
                    for try await piece in response.body {
                        let count = min(Int64(piece.readableBytes), range.upperBound - position)
                        guard count > 0 else { break }
                        let at = position
                        try await BlockingWork.run {
                            try piece.withUnsafeReadableBytes { try file.write(UnsafeRawBufferPointer(rebasing: $0[..<Int(count)]), at: at) }
                        }
                        position += count
                        received.add(count)
                        onBytes(Int(count))
                    }
                } catch let error as CloudKitError {
                    throw error
                } catch {
                    throw HTTPClientTransport.classify(error, url: url)
                }
                if position < range.upperBound {
                    throw CloudKitError(.networkFailure, "a range of \(url.absoluteString) ended after \(position - range.lowerBound) of \(range.count) bytes")
                }
            } catch let error where Self.isRetryable(error) {
                if position > before { failures = 0 }
                failures += 1
                guard failures < options.maximumAttempts else { throw error }
                try await pause(before: failures)
            }
        }
    }
}

extension Asset {
    /// Downloads the content to `destination` reusing the bytes of `basis`, an older version
    /// of it (only the chunks that differ are fetched; see
    /// ``AssetTransfer/download(from:to:expectedChecksum:basis:progress:)``), checking it
    /// against ``fileChecksum``. Falls back to a whole download whenever that cannot be done.
    /// Returns what was fetched and what was reused.
    /// - Throws: as ``download(to:transfer:progress:)``.
    @discardableResult
    public func download(to destination: URL, basis: URL?, transfer: AssetTransfer = AssetTransfer(),
                         progress: (@Sendable (AssetTransferProgress) -> Void)? = nil) async throws -> AssetDownloadResult {
        guard let downloadURL else {
            throw CloudKitError(.assetNotAvailable, "the asset has no downloadURL: fetch the record holding it from the server first")
        }
        return try await transfer.download(from: downloadURL, to: destination, expectedChecksum: fileChecksum, basis: basis, progress: progress)
    }

    /// As ``download(to:basis:transfer:progress:)``, with what is known about the basis
    /// (``AssetDownloadBasis``: its chunk list spares reading it).
    /// - Throws: as ``download(to:transfer:progress:)``.
    @discardableResult
    public func download(to destination: URL, reusing basis: AssetDownloadBasis?, transfer: AssetTransfer = AssetTransfer(),
                         progress: (@Sendable (AssetTransferProgress) -> Void)? = nil) async throws -> AssetDownloadResult {
        guard let downloadURL else {
            throw CloudKitError(.assetNotAvailable, "the asset has no downloadURL: fetch the record holding it from the server first")
        }
        return try await transfer.download(from: downloadURL, to: destination, expectedChecksum: fileChecksum, reusing: basis, progress: progress)
    }

    /// The chunk list of this fetched asset (see ``AssetTransfer/chunkList(from:hashBytes:)``),
    /// or nil when it has no download URL or the server offers none.
    /// - Throws: network errors.
    public func chunkList(transfer: AssetTransfer = AssetTransfer(), hashBytes: Int = 12) async throws -> AssetChunkList? {
        guard let downloadURL else { return nil }
        return try await transfer.chunkList(from: downloadURL, hashBytes: hashBytes)
    }
}
