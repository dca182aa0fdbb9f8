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
