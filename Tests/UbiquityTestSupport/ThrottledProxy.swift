// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Synchronization

/// A TCP relay on loopback (port 0) in front of a server that slows one direction: what the
/// client sends is passed on `bytesPerSlice` at a time with a pause after each slice — so an
/// upload through it lasts long enough to be seen in progress. Replies pass unthrottled.
/// Thread per connection direction; for tests only.
package final class ThrottledProxy: Sendable {
    /// The port to connect to.
    package let port: UInt16
    private let listener: Int32

    package init(to targetPort: UInt16, bytesPerSlice: Int = 64 * 1024, pauseMicroseconds: UInt32 = 20_000) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else { close(fd); throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread {
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 {
                    if errno == EINTR { continue }
                    return  // closed: stop() was called
                }
                let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                var target = Self.loopback(port: targetPort)
                let connected = withUnsafePointer(to: &target) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
                guard connected == 0 else { close(client); close(server); continue }
                let open = Ends(client, server)
                Self.pump(from: client, to: server, slice: bytesPerSlice, pause: pauseMicroseconds, open)
                Self.pump(from: server, to: client, slice: 256 * 1024, pause: 0, open)
            }
        }
        thread.name = "ThrottledProxy.accept"
        thread.start()
    }

    /// Stops accepting (open connections end when their ends close).
    package func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    deinit { stop() }

    package var url: String { "http://127.0.0.1:\(port)" }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    /// The two sockets of one relayed connection, closed when both directions are done.
    private final class Ends: Sendable {
        package let sockets: (Int32, Int32)
        package let running = Mutex(2)
        package init(_ a: Int32, _ b: Int32) { sockets = (a, b) }
        package func done() {
            guard running.withLock({ count -> Bool in count -= 1; return count == 0 }) else { return }
            close(sockets.0)
            close(sockets.1)
        }
    }

    private static func pump(from source: Int32, to destination: Int32, slice: Int, pause: UInt32, _ ends: Ends) {
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: slice)
            loop: while true {
                let n = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress!, slice) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                var offset = 0
                while offset < n {
                    let written = buffer.withUnsafeBytes { send(destination, $0.baseAddress! + offset, n - offset, Int32(MSG_NOSIGNAL)) }
                    if written < 0 && errno == EINTR { continue }
                    if written <= 0 { break loop }
                    offset += written
                }
                if pause > 0 { usleep(pause) }
            }
            shutdown(destination, Int32(SHUT_WR))
            shutdown(source, Int32(SHUT_RD))
            ends.done()
        }
        thread.name = "ThrottledProxy.pump"
        thread.start()
    }
}
