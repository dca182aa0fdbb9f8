// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import UbiquityCore
import UbiquityWire

/// HTTP/1.1 over a ``RawConnection`` for the connection-limit tests: requests written by hand
/// (half a header, a body shorter than announced), responses read with a bounded wait, and
/// whether the server has closed the connection. The waiting calls block a Dispatch thread
/// (``BlockingWork``), never one of Swift's cooperative threads, which the server needs.
extension RawConnection {
    /// A response as read off the socket.
    struct Answer: Sendable {
        var status: Int
        /// Header names in lower case.
        var headers: [String: String]
        var body: String
        var json: JSONValue { (try? JSONValue.parse(Data(body.utf8))) ?? .null }
    }

    /// Connects to the server at `url` (`http://127.0.0.1:PORT`), with every receive waiting at
    /// most `timeout` seconds.
    static func to(_ url: String, timeout: Double = 15) throws -> RawConnection {
        let connection = try RawConnection(port: Int(url.split(separator: ":").last!)!)
        connection.setReceiveTimeout(timeout)
        return connection
    }

    /// Makes each receive give up after `seconds`.
    func setReceiveTimeout(_ seconds: Double) {
        var value = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Reads one response (head, then `Content-Length` bytes of body); nil when none came
    /// before the receive timeout or the connection closed.
    func answer() async throws -> Answer? {
        try await BlockingWork.run { try self.readAnswer() }
    }

    /// ``answer()``, blocking the calling thread.
    func readAnswer() throws -> Answer? {
        var bytes: [UInt8] = []
        let marker: [UInt8] = Array("\r\n\r\n".utf8)
        while !(bytes.count >= 4 && Array(bytes.suffix(4)) == marker) {
            let next = try receive(1)
            guard !next.isEmpty else { return nil }
            bytes += next
        }
        let lines = String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() where line.contains(":") {
            let parts = line.split(separator: ":", maxSplits: 1)
            headers[parts[0].lowercased()] = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : ""
        }
        let length = headers["content-length"].flatMap { Int($0) } ?? 0
        let body = length > 0 ? try receive(length) : []
        return Answer(status: status, headers: headers, body: String(decoding: body, as: UTF8.self))
    }

    /// Reads one response; when none has come within a short wait, sends `body` and reads
    /// it then (for a request the server may answer before its body, or only after it).
    func answer(orSend body: [UInt8]) async throws -> Answer? {
        try await BlockingWork.run { try self.readAnswer(orSend: body) }
    }

    private func readAnswer(orSend body: [UInt8]) throws -> Answer? {
        var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        if poll(&ready, 1, 500) == 0 {
            try send(body)
        }
        return try readAnswer()
    }

    /// Whether the server closes the connection (end of stream or reset) before the receive
    /// timeout; bytes that arrive first are skipped.
    func closedByServer() async -> Bool {
        (try? await BlockingWork.run { self.waitForClose() }) ?? false
    }

    private func waitForClose() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if got > 0 { continue }
            if got == 0 { return true }
            return errno == ECONNRESET || errno == EPIPE
        }
    }

    /// `GET /healthz` on this connection, kept alive.
    func healthz() async throws -> Answer? {
        try send("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        return try await answer()
    }
}
