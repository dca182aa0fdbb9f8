// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import UbiquityCore
import UbiquityWire

/// A small in-memory server speaking the asset protocol of `docs/assets.md` over real HTTP on
/// loopback (the real one is `UbiquityServer`'s `AssetRoutes`, which this test target cannot
/// link), with switches to misbehave: cut an upload or a download after some bytes, or offer no
/// extension at all, like a plain CloudKit upload URL.
final class MiniAssetServer: Sendable {
    struct State: Sendable {
        var assets: [String: [UInt8]] = [:]
        var chunks: [String: [UInt8]] = [:]
        var sessions: [String: [UInt8]] = [:]
        var pending: [String: [AssetChunkRef]] = [:]
        /// Offer resumable uploads and deduplication.
        var extensions = true
        /// Cut the next upload's connection after this many body bytes (the server keeps them).
        var cutUploadAfter: Int?
        /// Cut the next download after this many body bytes.
        var cutDownloadAfter: Int?
        /// Send this ETag instead of the real checksum.
        var lyingETag: String?
        /// What `GET <download URL>?manifest=1` answers (nil: the content, as a server without
        /// chunk-level downloads does).
        var manifest: JSONValue?
        /// Body bytes received, per path kind (`upload`, `chunk`, `missing`, `manifest`).
        var received: [String: Int] = [:]
        /// Requests seen, as `METHOD path`.
        var log: [String] = []
    }

    let state = Mutex(State())
    let port: Int
    private let channel: any Channel

    private init(channel: any Channel) {
        self.channel = channel
        port = channel.localAddress?.port ?? 0
    }

    static func start() async throws -> MiniAssetServer {
        let box = Mutex<MiniAssetServer?>(nil)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(MiniAssetHandler(server: { box.withLock { $0 } }))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let server = MiniAssetServer(channel: channel)
        box.withLock { $0 = server }
        return server
    }

    func stop() async { try? await channel.close() }

    var base: String { "http://127.0.0.1:\(port)" }

    /// An upload URL (the token is random).
    func uploadURL() -> URL { URL(string: "\(base)/assets/1/upload/tok\(UInt32.random(in: 0...UInt32.max))")! }

    /// The download URL template of stored content (with CloudKit's `${f}`).
    func downloadURL(_ checksum: String) -> String {
        "\(base)/assets/1/download/\(Hex.encode(Data(base64Encoded: checksum)!))/${f}"
    }

    static func checksum(_ bytes: [UInt8]) -> String { Data(SHA256.hash(data: bytes)).base64EncodedString() }

    // MARK: Handling (on the channel's event loop)

    struct Reply {
        var status: HTTPResponseStatus
        var headers: [(String, String)] = []
        var body: [UInt8] = []
        static func json(_ value: JSONValue, status: HTTPResponseStatus = .ok, headers: [(String, String)] = []) -> Reply {
            Reply(status: status, headers: [("Content-Type", "application/json")] + headers, body: Array(value.serialized()))
        }
        static func error(_ status: HTTPResponseStatus, _ code: String, _ reason: String) -> Reply {
            .json(.object(["serverErrorCode": .string(code), "reason": .string(reason)]), status: status)
        }
    }

    func singleFile(_ bytes: [UInt8]) -> Reply {
        let checksum = Self.checksum(bytes)
        state.withLock { $0.assets[checksum] = bytes }
        return .json(.object(["singleFile": .object([
            "fileChecksum": .string(checksum), "size": .integer(Int64(bytes.count)), "receipt": .string("receipt-\(checksum)"),
        ])]))
    }

    func handle(method: HTTPMethod, uri: String, headers: HTTPHeaders, body: [UInt8]) -> Reply {
        let (path, query) = uri.split(separator: "?", maxSplits: 1).map(String.init).splitPair()
        let parts = path.split(separator: "/").map(String.init)
        let extensions = state.withLock { state in
            state.log.append("\(method) \(path)")
            return state.extensions
        }
        guard parts.count >= 3, parts[0] == "assets", parts[1] == "1" else { return .error(.notFound, "NOT_FOUND", "no route") }
        switch (method, parts[2]) {
        case (.GET, "upload") where extensions:
            let received = state.withLock { $0.sessions[parts[3]]?.count ?? 0 }
            let status = AssetUploadStatus(received: Int64(received), maximumSize: 1 << 30, chunking: .default, missingURL: "../chunks/missing",
                                           chunkURL: "../chunks/", manifestURL: "../manifest")
            return .json(status.json, headers: [("Upload-Offset", String(received))])
        case (.GET, "upload"):
            return Reply(status: .methodNotAllowed)
        case (.POST, "upload"):
            let token = parts[3]
            state.withLock { $0.received["upload", default: 0] += body.count }
            guard extensions, let range = headers.first(name: "Content-Range") else { return singleFile(body) }
            let (from, total) = Self.parseContentRange(range)
            let outcome = state.withLock { state -> (reply: Reply?, bytes: [UInt8]) in
                var held = state.sessions[token] ?? []
                let offset = from ?? held.count
                guard offset <= held.count else { return (.error(.conflict, "CONFLICT", "resume at \(held.count)"), []) }
                held.append(contentsOf: body.dropFirst(held.count - offset))
                guard held.count >= total else {
                    state.sessions[token] = held
                    return (.json(.object(["received": .integer(Int64(held.count))]), status: .accepted), [])
                }
                state.sessions[token] = nil
                return (nil, held)
            }
            return outcome.reply ?? singleFile(outcome.bytes)
        case (.POST, "chunks") where parts.count == 4 && parts[3] == "missing":
            state.withLock { $0.received["missing", default: 0] += body.count }
            let reader = try! WireReader(JSONValue.parse(Data(body)), path: "")
            let token = try! reader.requiredString("token")
            if let checksum = try! reader.string("fileChecksum"), let bytes = state.withLock({ $0.assets[checksum] }) {
                var reply = singleFile(bytes)
                var json = try! JSONValue.parse(Data(reply.body)).objectValue!
                json["missing"] = .array([])
                reply.body = Array(JSONValue.object(json).serialized())
                return reply
            }
            guard let chunks = try! AssetChunkRef.list(from: reader) else { return .error(.notFound, "NOT_FOUND", "unknown checksum") }
            let missing = state.withLock { state -> [String] in
                state.pending[token] = chunks
                return chunks.map(\.hash).filter { state.chunks[$0] == nil }
            }
            return .json(.object(["missing": .array(missing.map { .string($0) })]))
        case (.PUT, "chunks"), (.POST, "chunks"):
            state.withLock { $0.received["chunk", default: 0] += body.count }
            guard query.hasPrefix("token=") else { return .error(.badRequest, "BAD_REQUEST", "no token") }
            let hash = parts[3]
            guard Hex.encode(SHA256.hash(data: body)) == hash else { return .error(.badRequest, "BAD_REQUEST", "hash mismatch") }
            state.withLock { $0.chunks[hash] = body }
            return .json(.object(["hash": .string(hash)]))
        case (.POST, "manifest"):
            state.withLock { $0.received["manifest", default: 0] += body.count }
            let reader = try! WireReader(JSONValue.parse(Data(body)), path: "")
            let token = try! reader.requiredString("token")
            let assembled = state.withLock { state -> (bytes: [UInt8], missing: [String]) in
                let list = (try? AssetChunkRef.list(from: reader)) ?? state.pending[token] ?? []
                let missing = list.map(\.hash).filter { state.chunks[$0] == nil }
                guard missing.isEmpty else { return ([], missing) }
                return (list.flatMap { state.chunks[$0.hash]! }, [])
            }
            switch assembled.missing.isEmpty {
            case true: return singleFile(assembled.bytes)
            case false:
                let missing = assembled.missing
                return .json(.object(["serverErrorCode": .string("NOT_FOUND"), "reason": .string("missing"),
                                      "missing": .array(missing.map { .string($0) })]), status: .notFound)
            }
        case (.GET, "download"):
            let checksum = Data(Hex.decode(parts[3]) ?? []).base64EncodedString()
            guard let bytes = state.withLock({ $0.assets[checksum] }) else { return .error(.notFound, "NOT_FOUND", "gone") }
            let etag = state.withLock { $0.lyingETag } ?? "\"\(checksum)\""
            if query.contains("manifest=1"), let manifest = state.withLock({ $0.manifest }) { return .json(manifest) }
            if let range = headers.first(name: "Range"), range.hasPrefix("bytes="), let start = Int(range.dropFirst(6).split(separator: "-")[0]) {
                if let ifRange = headers.first(name: "If-Range"), ifRange != etag {
                    return Reply(status: .ok, headers: [("ETag", etag)], body: bytes)
                }
                return Reply(status: .partialContent, headers: [("ETag", etag), ("Content-Range", "bytes \(start)-\(bytes.count - 1)/\(bytes.count)")],
                             body: Array(bytes[start...]))
            }
            return Reply(status: .ok, headers: [("ETag", etag)], body: bytes)
        default:
            return .error(.notFound, "NOT_FOUND", "no route \(method) \(path)")
        }
    }

    /// `bytes a-b/T` → (a, T); `bytes */T` → (nil, T).
    static func parseContentRange(_ header: String) -> (Int?, Int) {
        let spec = header.dropFirst(6)
        let total = Int(spec.split(separator: "/")[1]) ?? 0
        return (spec.hasPrefix("*") ? nil : Int(spec.split(separator: "-")[0]), total)
    }

    /// What a cut-off upload leaves in its session: the bytes that arrived.
    func absorb(token: String, contentRange: String?, bytes: [UInt8]) {
        state.withLock { state in
            state.received["upload", default: 0] += bytes.count
            guard let contentRange, state.extensions else { return }
            let offset = Self.parseContentRange(contentRange).0 ?? 0
            var held = state.sessions[token] ?? []
            guard offset <= held.count else { return }
            held.append(contentsOf: bytes.dropFirst(held.count - offset))
            state.sessions[token] = held
        }
    }
}

extension Array where Element == String {
    fileprivate func splitPair() -> (String, String) { (self.first ?? "", count > 1 ? self[1] : "") }
}

/// The channel handler: collects a request, asks the server for the reply, writes it; cuts
/// connections when told.
final class MiniAssetHandler: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked because: NIO calls a handler only on its channel's event loop.
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let server: @Sendable () -> MiniAssetServer?
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var cutAt: Int?

    init(server: @escaping @Sendable () -> MiniAssetServer?) {
        self.server = server
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let server = server() else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
            cutAt = nil
            if head.method == .POST, head.uri.contains("/upload/") {
                cutAt = server.state.withLock { state in
                    defer { state.cutUploadAfter = nil }
                    return state.cutUploadAfter
                }
            }
        case .body(var buffer):
            body.append(contentsOf: buffer.readBytes(length: buffer.readableBytes) ?? [])
            if let cutAt, body.count >= cutAt, let head {
                // Keep what "arrived" in the session, then drop the connection.
                let token = String(head.uri.split(separator: "/").last ?? "")
                server.absorb(token: token, contentRange: head.headers.first(name: "Content-Range"), bytes: Array(body.prefix(cutAt)))
                self.head = nil
                context.close(promise: nil)
            }
        case .end:
            guard let head else { return }
            self.head = nil
            let reply = server.handle(method: head.method, uri: head.uri, headers: head.headers, body: body)
            var headers = HTTPHeaders(reply.headers)
            var payload = reply.body
            var cut: Int?
            if head.uri.contains("/download/"), head.method == .GET {
                cut = server.state.withLock { state in
                    defer { state.cutDownloadAfter = nil }
                    return state.cutDownloadAfter
                }
            }
            headers.replaceOrAdd(name: "Content-Length", value: String(payload.count))
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: reply.status, headers: headers))), promise: nil)
            if let cut, cut < payload.count {
                payload = Array(payload.prefix(cut))
                context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: payload)))), promise: nil)
                context.flush()
                context.close(promise: nil)
                return
            }
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: payload)))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}
