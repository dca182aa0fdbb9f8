import Foundation
import Logging
import UbiquityCore
import UbiquityIndex

/// Where a metadata query runs: in the daemon (its index and watcher, over the control socket)
/// or, with no daemon, in this process (an in-memory index, scanned and watched here).
///
/// `UBIQUITY_INDEX=daemon` requires the daemon, `local` never uses it; by default the daemon
/// is used when its control socket answers.
enum QueryBackend {
    /// Runs `request` where it should run and returns its events.
    static func events(for request: QueryRequest, logger: Logger) -> AsyncStream<QueryEvent> {
        let mode = ProcessInfo.processInfo.environment["UBIQUITY_INDEX"] ?? "auto"
        let socketPath = ControlWire.socketPath()
        if mode != "local" {
            do {
                return try DaemonQueryConnection.run(request, socketPath: socketPath)
            } catch {
                if mode == "daemon" {
                    return AsyncStream { continuation in
                        continuation.yield(.failed(UbiquityError(.serviceUnavailable,
                            "no daemon answers on '\(socketPath)' (UBIQUITY_INDEX=daemon): is the Ubiquity daemon running?", underlying: error)))
                        continuation.finish()
                    }
                }
            }
        }
        do {
            return try IndexHost.local(logger: logger).run(request)
        } catch {
            return AsyncStream { continuation in
                continuation.yield(.failed(UbiquityError.wrapping(error, "cannot open the in-process index")))
                continuation.finish()
            }
        }
    }
}

/// One query on the daemon's control socket; a dedicated thread reads its events.
enum DaemonQueryConnection {
    /// Connects, sends `request` and streams the daemon's events. Throws when no daemon answers.
    static func run(_ request: QueryRequest, socketPath: String) throws -> AsyncStream<QueryEvent> {
        let socket = try UnixSocket.connect(to: socketPath)
        try socket.send(ControlWire.encode(ControlWire.Request(op: .query, query: request)))
        let (stream, continuation) = AsyncStream<QueryEvent>.makeStream(bufferingPolicy: .unbounded)
        let thread = Thread {
            defer { continuation.finish() }
            while let line = socket.readLine() {
                do {
                    let reply = try ControlWire.decode(ControlWire.Reply.self, from: line)
                    if let event = reply.queryEvent { continuation.yield(event) }
                    if case .failed = reply.queryEvent { return }
                } catch {
                    continuation.yield(.failed(UbiquityError.wrapping(error, "bad reply from the daemon")))
                    return
                }
            }
            if !request.watch { return }
            continuation.yield(.failed(UbiquityError(.serviceUnavailable, "the daemon closed the query (did it stop?)")))
        }
        thread.name = "ubiquity.query.reader"
        continuation.onTermination = { _ in socket.shutdown() }
        thread.start()
        return stream
    }

    /// Sends a one-shot request (`status`, `rescan`, `sync`) and returns the reply.
    static func request(_ request: ControlWire.Request, socketPath: String = ControlWire.socketPath()) throws -> ControlWire.Reply {
        let socket = try UnixSocket.connect(to: socketPath)
        defer { socket.shutdown() }
        try socket.send(ControlWire.encode(request))
        guard let line = socket.readLine() else {
            throw UbiquityError(.serviceUnavailable, "the daemon closed the connection without answering")
        }
        let reply = try ControlWire.decode(ControlWire.Reply.self, from: line)
        if reply.event == .error { throw reply.error }
        return reply
    }
}

/// One-shot requests to the daemon's control socket (`ubiq index status`, `rescan`, `sync`).
package enum MetadataQueryControl {
    /// Sends `request` to the daemon and returns its reply; throws `serviceUnavailable` when no
    /// daemon answers, or the daemon's error.
    package static func request(_ request: ControlWire.Request, socketPath: String = ControlWire.socketPath()) throws -> ControlWire.Reply {
        do {
            return try DaemonQueryConnection.request(request, socketPath: socketPath)
        } catch let error as UbiquityError where error.code == .io || error.code == .notFound {
            throw UbiquityError(.serviceUnavailable, "no daemon answers on '\(socketPath)'", underlying: error)
        }
    }
}
