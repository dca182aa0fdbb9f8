// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A TCP connection to a server on loopback driven byte by byte: for clients that misbehave
/// (send half a request, or nothing, and never read).
package final class RawConnection {
    package let descriptor: Int32

    /// Connects to `127.0.0.1:port`; receives wait at most `receiveTimeout` seconds.
    package init(port: Int, receiveTimeout: Int = 30) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw DeviceError.didNotStart("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let code = errno
            close(descriptor)
            throw DeviceError.didNotStart("connect to port \(port): errno \(code)")
        }
        var timeout = timeval(tv_sec: receiveTimeout, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(descriptor) }

    /// Sends `text` (errors ignored: the server may have closed the connection).
    package func send(_ text: String) {
        _ = Array(text.utf8).withUnsafeBytes { Foundation.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// One receive: what arrived, empty at end of stream, on error or after the time-out.
    package func receive() -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        return Array(buffer.prefix(max(0, count)))
    }

    /// Receives until `text` has arrived or the stream ends; all that arrived.
    package func receive(until text: String) -> String {
        var received: [UInt8] = []
        while !String(decoding: received, as: UTF8.self).contains(text) {
            let bytes = receive()
            if bytes.isEmpty { break }
            received += bytes
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// Receives until the server closes the connection (or the time-out); all that arrived.
    package func receiveToEnd() -> String {
        var received: [UInt8] = []
        while true {
            let bytes = receive()
            if bytes.isEmpty { break }
            received += bytes
        }
        return String(decoding: received, as: UTF8.self)
    }
}
