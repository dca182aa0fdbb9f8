// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Crypto
import Dispatch
import Foundation
import NIOCore
import UbiquityWire
import UbiquityCore

/// A chunk of the file being uploaded: its reference and where it starts.
struct AssetChunkSpan: Sendable, Hashable {
    var ref: AssetChunkRef
    var offset: Int64
}

/// Cuts a file into chunks and hashes them and the whole, piece by piece. Used from one
/// blocking call at a time, never concurrently: pieces of at least ``parallelThreshold`` bytes
/// have the whole hash computed on a second thread while this one cuts and hashes the chunks
/// (two passes of SHA-256 over every byte otherwise make it the slowest part of a large upload).
final class AssetChunkScanner: @unchecked Sendable {
    // @unchecked because: every method is called from one `BlockingWork.run` at a time, in
    // sequence (the scan awaits each piece before the next); inside ``scan(_:)`` the two halves
    // touch disjoint state (`whole` / the chunker and chunk hashes) and `concurrentPerform`
    // returns only when both are done.
    private var chunker: FastCDC
    private var chunkHash = SHA256()
    private var whole: SHA256?
    private var position: Int64 = 0
    private var chunkStart: Int64 = 0
    private(set) var chunks: [AssetChunkSpan] = []

    /// Pieces at least this long are split over two threads.
    static let parallelThreshold = 1 << 20

    /// A scanner; without `wholeChecksum` only the chunks are hashed (``finish()`` then returns "").
    init(parameters: FastCDC.Parameters, wholeChecksum: Bool = true) {
        chunker = FastCDC(parameters: parameters)
        whole = wholeChecksum ? SHA256() : nil
    }

    func scan(_ buffer: ByteBuffer) {
        buffer.withUnsafeReadableBytes { scan($0) }
    }

    func scan(_ bytes: UnsafeRawBufferPointer) {
        if whole != nil, bytes.count >= Self.parallelThreshold {
            // both halves only read the buffer, which outlives the call
            nonisolated(unsafe) let shared = bytes
            DispatchQueue.concurrentPerform(iterations: 2) { half in
                if half == 0 { self.whole?.update(bufferPointer: shared) } else { self.cut(shared) }
            }
        } else {
            whole?.update(bufferPointer: bytes)
            cut(bytes)
        }
        position += Int64(bytes.count)
    }

    private func cut(_ bytes: UnsafeRawBufferPointer) {
        var offset = 0
        while offset < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            if let cut = chunker.boundary(in: rest) {
                chunkHash.update(bufferPointer: UnsafeRawBufferPointer(rebasing: rest[..<cut]))
                offset += cut
                endChunk(at: position + Int64(offset))
            } else {
                chunkHash.update(bufferPointer: rest)
                offset = bytes.count
            }
        }
    }

    private func endChunk(at end: Int64) {
        let hash = Hex.encode(chunkHash.finalize())
        chunks.append(AssetChunkSpan(ref: AssetChunkRef(hash: hash, size: Int(end - chunkStart)), offset: chunkStart))
        chunkStart = end
        chunkHash = SHA256()
    }

    /// Ends the scan; returns the whole content's checksum (standard base64 of its SHA-256).
    func finish() -> String {
        if chunker.finish() != nil { endChunk(at: position) }
        return whole.map { Data($0.finalize()).base64EncodedString() } ?? ""
    }
}

extension AssetTransfer {
    /// The deduplicating upload; nil when most of the file is missing on the server, so that it
    /// is better streamed whole.
    /// With a `scan` (made with `chunking`), the file is not read to find its chunks, and each
    /// chunk sent is checked against its scanned hash.
    func deduplicatedUpload(file: AssetFile, uploadURL: URL, status: AssetUploadStatus, chunking: FastCDC.Parameters, scan: AssetFileScan? = nil,
                            report: @escaping @Sendable (AssetTransferProgress) -> Void) async throws -> AssetUploadResult? {
        guard let missingPath = status.missingURL, let chunkPath = status.chunkURL, let manifestPath = status.manifestURL,
              let missingURL = URL(string: missingPath, relativeTo: uploadURL)?.absoluteURL,
              let manifestURL = URL(string: manifestPath, relativeTo: uploadURL)?.absoluteURL else { return nil }
        let token = uploadURL.lastPathComponent
        let size = file.size
        let sent = TransferCounter()

        // 1. Cut and hash the file as the server would (unless a scan did).
        let checksum: String
        let chunks: [AssetChunkSpan]
        if let scan {
            checksum = scan.fileChecksum
            chunks = scan.spans
            report(AssetTransferProgress(phase: .scanning, completedBytes: size, totalBytes: size))
        } else {
            let scanner = AssetChunkScanner(parameters: chunking)
            var offset: Int64 = 0
            while offset < size {
                try Task.checkCancellation()
                let count = Int(min(Int64(options.pieceSize * 8), size - offset))
                let at = offset
                try await BlockingWork.run { scanner.scan(try file.readNow(at: at, count: count)) }
                offset += Int64(count)
                report(AssetTransferProgress(phase: .scanning, completedBytes: offset, totalBytes: size))
            }
            checksum = scanner.finish()
            chunks = scanner.chunks
        }

        // 2. Ask which chunks the server lacks (or whether it has the whole file).
        // With the previous version's list (the scan's), the list relative to it, which also
        // asks by checksum (a few hundred bytes); otherwise first the whole file by its checksum
        // (a few hundred bytes), then the chunk list. The whole list also answers a server that
        // no longer holds the base, or does not know relative lists.
        var relativeAnswer: Reply?
        if let relative = Self.relativeQuestion(token: token, checksum: checksum, size: size, chunks: chunks, previous: scan?.previous, chunking: chunking) {
            let reply = try await postJSON(relative, to: missingURL, sent: sent, accept: [200, 400, 404, 409])
            if reply.status == 200 { relativeAnswer = reply }
        } else {
            let whole: JSONValue = .object(["token": .string(token), "fileChecksum": .string(checksum), "size": .integer(size)])
            let known = try await postJSON(whole, to: missingURL, sent: sent, accept: [200, 400, 404])
            if known.status == 200, known.json?.objectValue?["singleFile"] != nil {
                report(AssetTransferProgress(phase: .uploading, completedBytes: size, totalBytes: size))
                return AssetUploadResult(asset: try Self.singleFile(known), bytesSent: sent.total, chunksSent: 0, deduplicated: true, resumptions: 0)
            }
        }
        let answer: Reply
        if let relativeAnswer {
            answer = relativeAnswer
        } else {
            let question: JSONValue = .object([
                "token": .string(token), "fileChecksum": .string(checksum), "size": .integer(size),
                "packedChunks": .string(AssetChunkRef.packed(chunks.map(\.ref))),
            ])
            answer = try await postJSON(question, to: missingURL, sent: sent)
        }
        if answer.json?.objectValue?["singleFile"] != nil {
            report(AssetTransferProgress(phase: .uploading, completedBytes: size, totalBytes: size))
            return AssetUploadResult(asset: try Self.singleFile(answer), bytesSent: sent.total, chunksSent: 0, deduplicated: true, resumptions: 0)
        }
        guard let missingList = answer.json?.objectValue?["missing"]?.arrayValue else {
            throw CloudKitError(.serverRejectedRequest, "the server's chunks/missing answer has no missing list")
        }
        var wanted = Set(missingList.compactMap(\.stringValue))
        var spans: [AssetChunkSpan] = []
        for chunk in chunks where wanted.remove(chunk.ref.hash) != nil { spans.append(chunk) }
        let missingBytes = spans.reduce(Int64(0)) { $0 + Int64($1.ref.size) }
        if Double(missingBytes) > options.streamWhenMissingFraction * Double(size) { return nil }

        // 3. Send the missing chunks, then commit the list (the server remembered it).
        let done = TransferCounter()
        done.add(size - missingBytes)
        var chunksSent = 0
        var toSend = spans
        for _ in 0..<3 {
            chunksSent += toSend.count
            try await sendChunks(toSend, file: file, chunkPath: chunkPath, uploadURL: uploadURL, token: token, sent: sent) { count in
                report(AssetTransferProgress(phase: .uploading, completedBytes: min(size, done.add(Int64(count))), totalBytes: size))
            }
            // the checksum this side computed: the server may commit at once and check it later
            var commitBody: JSONValue = .object(["token": .string(token), "fileChecksum": .string(checksum), "size": .integer(size)])
            var commit = try await postJSON(commitBody, to: manifestURL, sent: sent, accept: [200, 400, 404])
            if commit.status == 400, AssetChecksum.kind(of: checksum) == .chunkList {
                // a server that does not know chunk-list checksums: it computes its own
                // (AssetTransfer.upload then checks the file is the scanned content)
                commitBody = .object(["token": .string(token), "size": .integer(size)])
                commit = try await postJSON(commitBody, to: manifestURL, sent: sent, accept: [200, 404])
            } else if commit.status == 400 {
                throw Self.error(for: commit)
            }
            if commit.status == 200 {
                report(AssetTransferProgress(phase: .uploading, completedBytes: size, totalBytes: size))
                return AssetUploadResult(asset: try Self.singleFile(commit), bytesSent: sent.total, chunksSent: chunksSent, deduplicated: true,
                                         resumptions: 0)
            }
            // Chunks went missing meanwhile (garbage collection): send those too.
            guard let again = commit.json?.objectValue?["missing"]?.arrayValue, !again.isEmpty else { throw Self.error(for: commit) }
            var lacking = Set(again.compactMap(\.stringValue))
            toSend = chunks.filter { lacking.remove($0.ref.hash) != nil }
        }
        throw CloudKitError(.serverRejectedRequest, "the server kept reporting chunks missing after they were sent")
    }

    /// The `chunks/missing` question with the list relative to `previous` (the version before,
    /// which the server holds when it was uploaded or downloaded through it), or nil when there
    /// is no usable previous list or most chunks are new anyway.
    static func relativeQuestion(token: String, checksum: String, size: Int64, chunks: [AssetChunkSpan], previous: AssetChunkList?,
                                 chunking: FastCDC.Parameters) -> JSONValue? {
        guard let previous, previous.chunking == chunking, !previous.chunks.isEmpty, previous.fileChecksum != checksum,
              !previous.fileChecksum.isEmpty else { return nil }
        let refs = chunks.map(\.ref)
        let delta = AssetChunkListDelta.make(base: previous.chunks, new: refs)
        guard delta.literalCount * 2 < refs.count else { return nil }
        return .object([
            "token": .string(token), "fileChecksum": .string(checksum), "size": .integer(size),
            "base": .string(previous.fileChecksum), "edits": delta.json(),
            "listChecksum": .string(AssetChunkListDelta.listChecksum(refs)),
        ])
    }

    /// POSTs a JSON body (with retries) and returns the reply; statuses outside `accept` throw.
    func postJSON(_ body: JSONValue, to url: URL, sent: TransferCounter, accept: Set<Int> = [200]) async throws -> Reply {
        let bytes = body.serialized()
        var attempt = 0
        while true {
            attempt += 1
            var request = HTTPClientRequest(url: url.absoluteString)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: bytes))
            sent.add(Int64(bytes.count))
            do {
                let reply = try await send(request)
                guard accept.contains(reply.status) else { throw Self.error(for: reply) }
                return reply
            } catch let error where Self.isRetryable(error) && attempt < options.maximumAttempts {
                try await pause(before: attempt)
            }
        }
    }

    /// PUTs chunks, a few at a time, each retried on its own.
    private func sendChunks(_ spans: [AssetChunkSpan], file: AssetFile, chunkPath: String, uploadURL: URL, token: String,
                            sent: TransferCounter, onChunk: @escaping @Sendable (Int) -> Void) async throws {
        let width = max(1, options.concurrentChunkUploads)
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = 0
            func start(_ span: AssetChunkSpan) {
                group.addTask {
                    try await self.sendChunk(span, file: file, chunkPath: chunkPath, uploadURL: uploadURL, token: token, sent: sent)
                    onChunk(span.ref.size)
                }
            }
            while next < min(width, spans.count) {
                start(spans[next])
                next += 1
            }
            while try await group.next() != nil {
                if next < spans.count {
                    start(spans[next])
                    next += 1
                }
            }
        }
    }

    private func sendChunk(_ span: AssetChunkSpan, file: AssetFile, chunkPath: String, uploadURL: URL, token: String,
                           sent: TransferCounter) async throws {
        let query = CloudKitHTTPRequest.percentEncode(token)
        guard let url = URL(string: "\(chunkPath)\(span.ref.hash)?token=\(query)", relativeTo: uploadURL)?.absoluteURL else {
            throw CloudKitError(.internalError, "cannot make the chunk URL from \(chunkPath)")
        }
        let bytes = try await BlockingWork.run { () -> ByteBuffer in
            let bytes = try file.readNow(at: span.offset, count: span.ref.size)
            // the chunk as read now must be the chunk as scanned (the file may have changed since)
            let hash = bytes.withUnsafeReadableBytes { Hex.encode(SHA256.hash(data: $0)) }
            guard hash == span.ref.hash else {
                throw CloudKitError(.assetFileModified, "the asset file \(file.url.path) changed while it was being uploaded (the chunk at \(span.offset) no longer matches)")
            }
            return bytes
        }
        var attempt = 0
        while true {
            attempt += 1
            var request = HTTPClientRequest(url: url.absoluteString)
            request.method = .PUT
            request.headers.add(name: "Content-Type", value: "application/octet-stream")
            request.body = .bytes(bytes)
            sent.add(Int64(bytes.readableBytes))
            do {
                let reply = try await send(request)
                guard reply.status == 200 else { throw Self.error(for: reply) }
                return
            } catch let error where Self.isRetryable(error) && attempt < options.maximumAttempts {
                try await pause(before: attempt)
            }
        }
    }
}
