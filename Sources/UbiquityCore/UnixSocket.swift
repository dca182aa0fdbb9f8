// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// Minimal blocking Unix-domain stream sockets with newline-framed messages, used by the
/// coordination service and its clients. Blocking calls run on dedicated threads, never on
/// the cooperative pool.
public final class UnixSocket: @unchecked Sendable {  // @unchecked because fd is immutable and writes are serialised by writeLock
    /// The socket's file descriptor.
    public let fd: Int32
    private let writeLock = NSLock()
    private var buffer: [UInt8] = []  // touched only by the single reader thread

    init(fd: Int32) { self.fd = fd }

    deinit { Glibc.close(fd) }

    /// Connects to the socket at `path`.
    public static func connect(to path: String) throws -> UnixSocket {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw UbiquityError.posix("socket", path: path) }
        var address = try makeAddress(path)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard rc == 0 else {
            let err = errno
            Glibc.close(fd)
            throw UbiquityError.posix("connect", path: path, errno: err)
        }
        // only this user's own processes (or root's) are answered: another local user who made
        // the socket's folder first could serve a socket of the same name
        if let peer = PrivateFolder.peerUser(of: fd), peer != getuid(), peer != 0 {
            Glibc.close(fd)
            throw UbiquityError(.permissionDenied, "the socket '\(path)' is served by user \(peer), not by you (user \(getuid())): refusing to talk to it")
        }
        return UnixSocket(fd: fd)
    }

    /// Binds and listens at `path` (mode 0600). A stale socket file (nobody listening) is
    /// replaced; a live one is an `alreadyExists` error.
    public static func listen(at path: String) throws -> UnixSocket {
        if FileManager.default.fileExists(atPath: path) {
            if (try? connect(to: path)) != nil {
                throw UbiquityError(.alreadyExists, "another process already serves '\(path)' (is a daemon running?)")
            }
            unlink(path)
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw UbiquityError.posix("socket", path: path) }
        var address = try makeAddress(path)
        let old = umask(0o177)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        umask(old)
        guard rc == 0 else {
            let err = errno
            Glibc.close(fd)
            throw UbiquityError.posix("bind", path: path, errno: err)
        }
        guard Glibc.listen(fd, 128) == 0 else { throw UbiquityError.posix("listen", path: path) }
        return UnixSocket(fd: fd)
    }

    /// Accepts a connection (blocks).
    public func accept() throws -> UnixSocket {
        while true {
            let client = Glibc.accept(fd, nil, nil)
            if client >= 0 {
                _ = fcntl(client, F_SETFD, FD_CLOEXEC)
                return UnixSocket(fd: client)
            }
            if errno == EINTR { continue }
            throw UbiquityError.posix("accept")
        }
    }

    /// Sends one line (a newline is appended). Thread-safe.
    public func send(_ line: [UInt8]) throws {
        try send(lines: [line])
    }

    /// Sends several lines in one write, so the peer wakes once for all of them. Thread-safe.
    public func send(lines: [[UInt8]]) throws {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(lines.reduce(0) { $0 + $1.count + 1 })
        for line in lines {
            bytes += line
            bytes.append(10)
        }
        writeLock.lock()
        defer { writeLock.unlock() }
        try bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if n < 0 {
                    if errno == EINTR { continue }
                    throw UbiquityError.posix("send")
                }
                offset += n
            }
        }
    }

    /// Whether a complete line is already buffered (the next ``readLine()`` will not block).
    /// Call from the reading thread only.
    public var hasBufferedLine: Bool { buffer.contains(10) }

    /// Reads the next line (without its newline); nil at end of stream. Call from one thread only.
    public func readLine() -> [UInt8]? {
        while true {
            if let newline = buffer.firstIndex(of: 10) {
                let line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                return line
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return nil }
            buffer.append(contentsOf: chunk[..<n])
        }
    }

    /// Shuts the connection down in both directions (wakes a blocked reader).
    public func shutdown() { _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }

    private static func makeAddress(_ path: String) throws -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw UbiquityError(.invalidArgument, "socket path '\(path)' is longer than \(MemoryLayout.size(ofValue: address.sun_path) - 1) bytes; use a shorter XDG_RUNTIME_DIR")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
            raw[bytes.count] = 0
        }
        return address
    }
}
