// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Synchronization
import UbiquityCore

/// A writer of a resumable upload session, as ``BlobSessions`` keeps it between requests.
protocol SessionBlobWriter: BlobWriter {
    /// The size the session announced.
    var totalSize: Int64? { get }
    /// When the session was created.
    var created: Date { get }
    /// Whether it can take more bytes (not finished, aborted or failed).
    var isUsable: Bool { get async }
    /// Saves its state so that a later request (or process) continues where it stopped.
    func suspend() async throws
}

/// The upload sessions of one store in this process: those a request is using (one request
/// per session at a time) and interrupted ones kept in memory, least recently used dropped
/// first (``FileBlobStore`` and ``PackBlobStore``, each with its own writer).
final class BlobSessions<Writer: SessionBlobWriter>: Sendable {
    private let table = Mutex(SessionTable<Writer>())
    private let limit: Int
    private let logger: Logger

    /// Sessions keeping at most `limit` interrupted writers in memory.
    init(limit: Int, logger: Logger) {
        self.limit = limit
        self.logger = logger
    }

    /// Runs `body` on the table, locked.
    func withLock<R>(_ body: (inout SessionTable<Writer>) throws -> R) rethrows -> R { try table.withLock { try body(&$0) } }

    /// Runs `body` with session `id`'s writer, exclusively: the one kept in memory, else the one
    /// `open` recovers or creates. When `body` ends without finishing, the writer saves its
    /// state and stays in memory for the next request.
    /// - Throws: `conflict` when another request uses the session, or it is for another size.
    func run<T: Sendable>(id: String, totalSize: Int64, open: () async throws -> Writer, _ body: (any BlobWriter) async throws -> T) async throws -> T {
        try BlobSessionID.check(id)
        guard totalSize >= 0 else { throw UbiquityError(.invalidArgument, "an upload's size cannot be negative") }
        let cached = try table.withLock { table -> Writer? in
            guard !table.busy.contains(id) else {
                throw UbiquityError(.conflict, "another request is uploading to this session; retry when it ends")
            }
            table.busy.insert(id)
            return table.take(id)
        }
        let writer: Writer
        do {
            if let cached, await cached.isUsable {
                writer = cached
            } else {
                writer = try await open()
            }
            guard writer.totalSize == totalSize else {
                throw UbiquityError(.conflict, "this upload session is for \(writer.totalSize ?? 0) bytes, not \(totalSize)")
            }
        } catch {
            _ = table.withLock { $0.busy.remove(id) }
            throw error
        }
        do {
            let result = try await body(writer)
            await release(id, writer: writer)
            return result
        } catch {
            await release(id, writer: writer)
            throw error
        }
    }

    /// Ends a request's use of a session: an unfinished, healthy writer saves its state and stays
    /// in memory for the next request.
    private func release(_ id: String, writer: Writer) async {
        var keep = false
        if await writer.isUsable {
            do {
                try await writer.suspend()
                keep = true
            } catch {
                logger.warning("upload session could not be saved", metadata: ["blob.session": "\(id)", "error": "\(error)"])
            }
        }
        table.withLock { table in
            table.busy.remove(id)
            if keep { table.keep(writer, id: id, limit: limit) }
        }
    }

    /// The state of session `id` from its writer in memory, if there is one.
    func cachedInfo(_ id: String) async -> BlobUploadSessionInfo? {
        guard let writer = table.withLock({ $0.cached[id] }), let totalSize = writer.totalSize else { return nil }
        return BlobUploadSessionInfo(received: await writer.bytesWritten, totalSize: totalSize, created: writer.created)
    }
}

/// Upload sessions in use, and interrupted ones kept in memory (by ``FileBlobStore`` and
/// ``PackBlobStore``, each with its own writer).
struct SessionTable<Writer: Sendable>: Sendable {
    var busy: Set<String> = []
    var cached: [String: Writer] = [:]
    /// Least recently suspended first.
    var order: [String] = []

    mutating func take(_ id: String) -> Writer? {
        order.removeAll { $0 == id }
        return cached.removeValue(forKey: id)
    }

    mutating func keep(_ writer: Writer, id: String, limit: Int) {
        cached[id] = writer
        order.append(id)
        while order.count > max(limit, 0) {
            cached[order.removeFirst()] = nil
        }
    }
}

/// Upload session ids.
enum BlobSessionID {
    /// Checks that `id` is 1–64 characters of `a-z 0-9 - _` (it names a folder or a key).
    /// - Throws: `invalidArgument` when it is not.
    static func check(_ id: String) throws {
        let allowed = id.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D || $0 == 0x5F }
        guard !id.isEmpty, id.utf8.count <= 64, allowed else {
            throw UbiquityError(.invalidArgument, "an upload session id is 1 to 64 characters of a-z, 0-9, - and _")
        }
    }
}

extension BlobSessionID {
    /// A session's `info`: its total size and creation time, as text.
    static func infoText(totalSize: Int64, created: Date) -> String {
        "total \(totalSize)\ncreated \(Int64(created.timeIntervalSince1970))\n"
    }

    /// Reads ``infoText(totalSize:created:)``.
    /// - Throws: `io` naming session `id` when it is damaged.
    static func parseInfo(_ text: String, id: String) throws -> (totalSize: Int64, created: Date) {
        var total: Int64?
        var created: Int64?
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2 else { continue }
            if parts[0] == "total" { total = Int64(parts[1]) }
            if parts[0] == "created" { created = Int64(parts[1]) }
        }
        guard let total, let created else { throw UbiquityError(.io, "upload session \(id) is damaged (info)") }
        return (total, Date(timeIntervalSince1970: TimeInterval(created)))
    }
}
