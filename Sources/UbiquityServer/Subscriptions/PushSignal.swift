// SPDX-License-Identifier: Apache-2.0
import CUbiquityShims
import Foundation
import Logging
import PostgresNIO
import Synchronization
import UbiquityCore

/// How server processes sharing one store tell each other that notification logs moved, so a
/// subscriber connected to any process hears of a save made through another.
protocol PushSignal: Sendable {
    /// Runs until the task is cancelled, calling `received` with the heads other processes
    /// announce; `received(nil)` means "something may have been missed: check every connected
    /// log" (after connecting or reconnecting).
    func run(received: @escaping @Sendable ([NotificationLogKey: Int64]?) async -> Void) async
    /// Called after a local commit that moved logs (the PostgreSQL signal has nothing to do:
    /// its `NOTIFY` was sent inside the transaction).
    func announce(_ heads: [NotificationLogKey: Int64])
    /// Stops the signal (closes sockets and connections).
    func stop()
}

/// PostgreSQL: a dedicated connection `LISTEN`s on the store's push channel; every write
/// transaction that appended notifications `NOTIFY`s it (delivered when it commits, to every
/// listening process, this one included). The connection is re-opened with back-off when it
/// drops, and each (re)connection asks for a full check.
final class PostgresPushSignal: PushSignal {
    let url: PostgresURL
    let channel: String
    let logger: Logger

    init(store: PostgresRecordStore, logger: Logger) {
        url = store.url
        channel = PostgresPushChannel.name(schema: store.schema)
        self.logger = logger
    }

    func run(received: @escaping @Sendable ([NotificationLogKey: Int64]?) async -> Void) async {
        var delay = Duration.milliseconds(200)
        var connectionID = 1
        while !Task.isCancelled {
            do {
                let configuration = try url.configuration(startupParameters: [])
                let connection = try await PostgresConnection.connect(configuration: configuration, id: connectionID, logger: logger)
                connectionID += 1
                do {
                    try await connection.listen(on: channel) { notifications in
                        delay = .milliseconds(200)
                        await received(nil)
                        for try await notification in notifications {
                            await received(PushAnnouncement.decode(notification.payload))
                        }
                    }
                } catch {
                    try? await connection.close()
                    throw error
                }
                try? await connection.close()
            } catch {
                if Task.isCancelled { return }
                logger.warning("the PostgreSQL push listener failed; reconnecting", metadata: ["error": "\(error)", "channel": "\(channel)"])
            }
            do {
                try await Task.sleep(for: delay)
            } catch {
                return
            }
            delay = min(delay * 2, .seconds(5))
        }
    }

    func announce(_ heads: [NotificationLogKey: Int64]) {}

    func stop() {}
}

/// SQLite (several `ubiq serve` processes may share one data directory): each process binds a
/// Unix datagram socket in the abstract namespace and leaves a file naming it in
/// `DATA/push/`; after a commit that moved logs it sends one datagram (the announcement) to
/// every other process listed there (non-blocking sends; the list is re-read once a second by
/// the receiving thread, which also removes the files of processes that refused a datagram).
/// A datagram lost (a full receive buffer) costs at most the hub's sweep interval.
///
/// Abstract sockets have no file permissions: any local user could send to one. The kernel
/// attaches each sender's credentials (`SO_PASSCRED`), and datagrams from users other than the
/// server's own (or root) are dropped (issue 24): another user can neither announce fake
/// heads nor register itself as a peer to be told of commits.
final class SQLitePushSignal: PushSignal {
    private struct State {
        var peers: [String] = []
        var stale: Set<String> = []
        var stopped = false
        var threadRunning = false
        var socketClosed = false
    }

    let directory: URL
    let logger: Logger
    /// This process's peer name (its file name in `directory` and part of its socket address).
    let name: String
    /// The data directory's part of the socket addresses (its path's digest).
    let namespace: String
    private let socket: Int32
    private let state = Mutex(State())

    /// Opens the socket and registers it in `dataDirectory/push`.
    init(dataDirectory: URL, logger: Logger) throws {
        directory = dataDirectory.appendingPathComponent("push", isDirectory: true)
        self.logger = logger
        try PrivateFolder.ensure(directory.path)  // 0700 whatever the umask
        namespace = String(SecretToken.digest(directory.standardizedFileURL.path).prefix(16))
        name = "\(getpid())-\(UUID().uuidString.prefix(8).lowercased())"
        socket = Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0 else { throw UbiquityError(.io, "cannot open the push datagram socket (errno \(errno))") }
        var address = Self.address(namespace: namespace, name: name)
        let length = Self.addressLength(namespace: namespace, name: name)
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(socket, $0, length) }
        }
        guard bound == 0, ub_pass_credentials(socket) == 0 else {
            let code = errno
            Glibc.close(socket)
            throw UbiquityError(.io, "cannot bind the push datagram socket (errno \(code))")
        }
        _ = FileManager.default.createFile(atPath: directory.appendingPathComponent(name + ".peer").path, contents: Data())
        refreshPeers()
        // Tell the processes already there, so their next announcement reaches this one
        // without waiting for their once-a-second re-read of the list.
        send(Array((Self.helloPrefix + name).utf8))
    }

    /// A datagram announcing a new peer (`hello\tNAME`), as opposed to log heads.
    private static let helloPrefix = "hello\t"

    /// An abstract-namespace address: NUL, then `ubiquity-push/NAMESPACE/NAME` (no file; it goes
    /// away with the process).
    private static func address(namespace: String, name: String) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array("ubiquity-push/\(namespace)/\(name)".utf8.prefix(100))
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw[0] = 0
            for (index, byte) in bytes.enumerated() { raw[index + 1] = byte }
        }
        return address
    }

    private static func addressLength(namespace: String, name: String) -> socklen_t {
        let count = min(Array("ubiquity-push/\(namespace)/\(name)".utf8).count, 100)
        return socklen_t(MemoryLayout<sa_family_t>.size + 1 + count)
    }

    func run(received: @escaping @Sendable ([NotificationLogKey: Int64]?) async -> Void) async {
        let (stream, continuation) = AsyncStream<[NotificationLogKey: Int64]>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let started = state.withLock { state -> Bool in
            guard !state.stopped, !state.threadRunning else { return false }
            state.threadRunning = true
            return true
        }
        guard started else { return }
        let thread = Thread { [self] in
            receive(continuation)
        }
        thread.name = "ubiquity-push-signal"
        thread.start()
        await received(nil)
        await withTaskCancellationHandler {
            for await heads in stream { await received(heads) }
        } onCancel: {
            self.stop()
        }
    }

    /// The receiving thread: blocking polls (half a second), the peer list re-read every second.
    private func receive(_ continuation: AsyncStream<[NotificationLogKey: Int64]>.Continuation) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var refreshed = ContinuousClock.now
        var rejected = 0
        while !state.withLock({ $0.stopped }) {
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            if Glibc.poll(&descriptor, 1, 500) > 0 {
                var sender: UInt32 = .max
                let count = buffer.withUnsafeMutableBytes { ub_recv_with_uid(socket, $0.baseAddress, $0.count, &sender) }
                if count > 0, !Self.accepts(sender: sender) {
                    rejected += 1
                    if rejected == 1 || rejected.isMultiple(of: 1000) {
                        logger.warning("dropped push datagrams from another local user", metadata: ["ubiquity.uid": "\(sender)", "ubiquity.count": "\(rejected)"])
                    }
                } else if count > 0 {
                    let text = String(decoding: buffer[0..<count], as: UTF8.self)
                    if text.hasPrefix(Self.helloPrefix) {
                        let peer = String(text.dropFirst(Self.helloPrefix.count))
                        state.withLock { state in if !state.peers.contains(peer) { state.peers.append(peer) } }
                    } else {
                        continuation.yield(PushAnnouncement.decode(text))
                    }
                }
            }
            if ContinuousClock.now - refreshed > .seconds(1) {
                refreshPeers()
                refreshed = ContinuousClock.now
            }
        }
        continuation.finish()
        closeSocket()
    }

    /// Whether a datagram from the user `sender` is heard: this process's user or root.
    static func accepts(sender: UInt32) -> Bool { sender == getuid() || sender == 0 }

    func announce(_ heads: [NotificationLogKey: Int64]) {
        guard !heads.isEmpty else { return }
        for payload in PushAnnouncement.encode(heads, limit: 60_000) { send(Array(payload.utf8)) }
    }

    /// Sends one datagram to every other peer (non-blocking; a peer that refuses is stale).
    private func send(_ bytes: [UInt8]) {
        // Under the lock, so the socket cannot be closed (and its descriptor reused) meanwhile.
        state.withLock { state in
            guard !state.socketClosed else { return }
            for peer in state.peers where peer != name {
                var address = Self.address(namespace: namespace, name: peer)
                let length = Self.addressLength(namespace: namespace, name: peer)
                let sent = withUnsafePointer(to: &address) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { target in
                        bytes.withUnsafeBytes { Glibc.sendto(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT), target, length) }
                    }
                }
                if sent < 0, errno == ECONNREFUSED || errno == ENOENT { state.stale.insert(peer) }
            }
        }
    }

    /// Re-reads the peer files, removing those of processes that refused a datagram.
    private func refreshPeers() {
        let stale = state.withLock { state -> Set<String> in
            defer { state.stale = [] }
            return state.stale
        }
        for peer in stale { try? FileManager.default.removeItem(at: directory.appendingPathComponent(peer + ".peer")) }
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
            .filter { $0.hasSuffix(".peer") }.map { String($0.dropLast(5)) }.filter { !stale.contains($0) }
        state.withLock { $0.peers = names }
    }

    func stop() {
        let (already, running) = state.withLock { state -> (Bool, Bool) in
            defer { state.stopped = true }
            return (state.stopped, state.threadRunning)
        }
        guard !already else { return }
        try? FileManager.default.removeItem(at: directory.appendingPathComponent(name + ".peer"))
        // A running receiver closes the socket when it sees the flag (within half a second).
        if !running { closeSocket() }
    }

    private func closeSocket() {
        state.withLock { state in
            guard !state.socketClosed else { return }
            state.socketClosed = true
            Glibc.close(socket)
        }
    }
}
