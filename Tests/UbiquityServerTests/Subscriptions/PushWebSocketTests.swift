// SPDX-License-Identifier: Apache-2.0
import Foundation
import HummingbirdWSClient
import Logging
import Synchronization
import Testing
import UbiquityCore
@testable import UbiquityServer
import UbiquityWire

/// The WebSocket channel: frames, resuming, and a client that never reads (bounded memory, the
/// others unaffected, the slow one disconnected).
@Suite struct PushWebSocketTests {
    /// Reads frames from a WebSocket into a list until `until` says stop (or, so that a lost
    /// frame fails the test instead of hanging it, until `seconds` have passed).
    static func frames(_ url: String, seconds: Int = 60, until: @escaping @Sendable ([JSONValue]) -> Bool) async throws -> [JSONValue] {
        final class Frames: Sendable { let list = Mutex<[JSONValue]>([]) }
        let received = Frames()
        let logger = {
            var logger = Logger(label: "test.ws")
            logger.logLevel = .warning
            return logger
        }()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await WebSocketClient.connect(url: url, logger: logger) { inbound, _, _ in
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        guard case .text(let text) = message, let json = try? JSONValue.parse(Data(text.utf8)) else { continue }
                        let done = received.list.withLock { frames in
                            frames.append(json)
                            return until(frames)
                        }
                        if done { return }
                    }
                }
            }
            group.addTask {
                try await Task.sleep(for: .seconds(seconds))
                throw UbiquityError(.timedOut, "no frames for \(seconds) s from \(url)")
            }
            try await group.next()
            group.cancelAll()
        }
        return received.list.withLock { $0 }
    }

    @Test(arguments: StoreKind.available)
    func webSocketDeliversReadyNotificationsAndResumes(kind: StoreKind) async throws {
        let push = try await PushFixture.start(kind)
        defer { Task { await push.stop() } }
        _ = try await push.subscribe([querySubscription("all", type: "Note")])
        let (_, http) = try await push.pushToken()
        let ws = "ws" + http.dropFirst(4)
        let start = try await push.head(http)
        // resuming from the head read above: on a loaded machine the saves below may come before
        // the connection is made, and must still be delivered
        let listening = Task {
            try await Self.frames(ws + "?position=\(start)") { frames in frames.filter { $0["type"] == "notification" }.count >= 2 }
        }
        try await Task.sleep(for: .milliseconds(200))
        _ = try await push.save([("a", "Note", [:])])
        _ = try await push.save([("b", "Note", [:])])
        let frames = try await listening.value
        #expect(frames.first?["type"] == "ready")
        let notifications = frames.filter { $0["type"] == "notification" }
        #expect(notifications.compactMap { $0["notification"]?.ck("qry")?["rid"]?.stringValue } == ["a", "b"])
        #expect(notifications.map { $0["position"] } == [.integer(start + 1), .integer(start + 2)])
        // reconnecting from the first position gives the second again (at-least-once resume)
        let resumed = try await Self.frames(ws + "?position=\(start + 1)") { frames in frames.contains { $0["type"] == "notification" } }
        #expect(resumed.first { $0["type"] == "notification" }?["notification"]?.ck("qry")?["rid"] == "b")
        // an unknown token is not upgraded
        await #expect(throws: (any Error).self) {
            _ = try await Self.frames(push.servers[0].url.replacingOccurrences(of: "http", with: "ws") + "/push/1/nope") { _ in true }
        }
    }

    @Test(arguments: StoreKind.available)
    func aClientThatNeverReadsIsBoundedAndDoesNotStopOthers(kind: StoreKind) async throws {
        let push = try await PushFixture.start(kind, push: PushConfiguration(connectionQueueCapacity: 16, webSocketWriteTimeout: 1))
        defer { Task { await push.stop() } }
        // large notifications: ten 1 KiB fields each
        let keys = (0..<10).map { "f\($0)" }
        _ = try await push.subscribe([querySubscription("all", type: "Note", info: ["desiredKeys": .array(keys.map { .string($0) })])])
        let (token, http) = try await push.pushToken()
        let port = try #require(URL(string: push.servers[0].url)?.port)
        let stalled = try StalledWebSocket(port: port, path: "/push/1/\(token)")
        defer { stalled.close() }
        var upgraded = await push.servers[0].server.push.connectedClients
        for _ in 0..<300 where upgraded < 1 {
            try await Task.sleep(for: .milliseconds(100))
            upgraded = await push.servers[0].server.push.connectedClients
        }
        #expect(upgraded == 1)

        let text = JSONValue.string(String(repeating: "x", count: 1000))
        var fields: [String: JSONValue] = [:]
        for key in keys { fields[key] = text }
        let start = try await push.head(http)
        let total = 1_000
        for batch in 0..<(total / 200) {
            _ = try await push.save((0..<200).map { ("n\(batch)-\($0)", "Note", fields) })
        }
        // the stalled client is disconnected (its writes time out) and its mailbox is gone …
        var connected = await push.servers[0].server.push.connectedClients
        for _ in 0..<200 where connected > 0 {
            try await Task.sleep(for: .milliseconds(100))
            connected = await push.servers[0].server.push.connectedClients
        }
        #expect(connected == 0)
        // … while every notification is still in the log for a client that does read
        let (payloads, _) = try await push.collect(http, from: start, count: total)
        #expect(payloads.count == total)
        #expect(Set(payloads.compactMap { $0.ck("qry")?["rid"]?.stringValue }).count == total)
    }

    @Test func aListenerHoldsAtMostItsCapacity() {
        let key = NotificationLogKey(container: "c", environment: .development, user: "_u")
        let listener = NotificationListener(key: key, capacity: 4)
        func entry(_ sequence: Int64) -> StoredNotification {
            StoredNotification(key: key, sequence: sequence, notificationID: "\(sequence)", payload: .object([:]), createdAt: 0)
        }
        listener.offer([entry(1), entry(2), entry(3)])
        #expect(listener.take().notifications.count == 3)
        for sequence in 4...10_000 { listener.offer([entry(Int64(sequence))]) }
        let mail = listener.take()
        #expect(mail.overflowed)
        #expect(mail.notifications.count <= 4)
        listener.offer([entry(10_001)])
        #expect(listener.take().notifications.map(\.sequence) == [10_001])
    }
}

/// A WebSocket client that completes the upgrade and then never reads: a small receive
/// buffer, no reads, so the server's writes to it stall.
final class StalledWebSocket: Sendable {
    let descriptor: Int32

    init(port: Int, path: String) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw UbiquityError(.io, "socket failed") }
        var size: Int32 = 4096
        setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw UbiquityError(.io, "connect failed") }
        let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        let bytes = Array(request.utf8)
        _ = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, 0) }
    }

    func close() {
        _ = Glibc.close(descriptor)
    }
}
