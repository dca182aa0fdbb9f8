// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// Buffered stdout for long listings: bytes are collected and written 64 KiB at a time (one
/// `write` per line would dominate a listing of 100,000 items). Call ``flush()`` at the end.
struct OutputBuffer {
    private var bytes: [UInt8] = []
    private let limit = 64 * 1024

    init() { bytes.reserveCapacity(limit + 4096) }

    /// Appends `text` and a line break.
    mutating func line(_ text: String) {
        bytes.append(contentsOf: text.utf8)
        bytes.append(10)
        if bytes.count >= limit { flush() }
    }

    /// Appends `text` without a line break.
    mutating func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// Appends raw bytes without a line break.
    mutating func append(_ raw: UnsafeBufferPointer<UInt8>) {
        bytes.append(contentsOf: raw)
    }

    /// Appends one byte.
    mutating func append(byte: UInt8) {
        bytes.append(byte)
    }

    /// Appends `count` spaces (none when `count` is not positive): column padding.
    mutating func append(spaces count: Int) {
        if count > 0 { bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: count)) }
    }

    /// Appends `value` in decimal, at least `width` digits (zero-padded).
    mutating func append(decimal value: Int64, width: Int = 1) {
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var rest = value.magnitude
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[19 - count] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
                count += 1
            } while rest > 0 && count < 20
            while count < min(width, 20) {
                buffer[19 - count] = UInt8(ascii: "0")
                count += 1
            }
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[(20 - count)...]))
        }
    }

    /// Ends the line (and writes out a full buffer).
    mutating func endLine() {
        bytes.append(10)
        if bytes.count >= limit { flush() }
    }

    /// Writes what is buffered (a closed pipe ends the process quietly, as `ls` does).
    mutating func flush() {
        CLI.outputLock.withLock { _ in
            bytes.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let n = Glibc.write(STDOUT_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
                    if n < 0 {
                        if errno == EINTR { continue }
                        if errno == EPIPE { exit(0) }
                        return
                    }
                    offset += n
                }
            }
        }
        bytes.removeAll(keepingCapacity: true)
    }
}
