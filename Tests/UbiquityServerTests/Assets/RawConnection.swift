// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A plain TCP connection for tests that misbehave on purpose: send a body shorter than its
/// Content-Length and hang up, or stop reading a response.
final class RawConnection: @unchecked Sendable {
    // @unchecked because: each test uses its connection from one task, sequentially.
    let fd: Int32

    /// Connects to 127.0.0.1:`port`; `receiveBuffer` shrinks the socket's receive buffer.
    init(port: Int, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
    }

    deinit { close(fd) }

    /// Sends all of `bytes`.
    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw POSIXError(.EPIPE) }
            offset += sent
        }
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Receives up to `count` bytes (fewer at the end of the stream).
    func receive(_ count: Int) throws -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        while out.count < count {
            let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, min($0.count, count - out.count), 0) }
            if got <= 0 { break }
            out.append(contentsOf: buffer[0..<got])
        }
        return out
    }

    /// Closes both directions.
    func hangUp() { shutdown(fd, Int32(SHUT_RDWR)) }
}
