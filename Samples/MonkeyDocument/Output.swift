// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Synchronization

/// Whole lines to stdout and stderr, written at once (unbuffered) and never interleaved:
/// the sample is driven line by line by tests.
enum Output {
    private static let lock = Mutex(())

    /// Writes `text` and a line break to stdout.
    static func line(_ text: String) { write(text, to: STDOUT_FILENO) }

    /// Writes `MonkeyDocument: text` and a line break to stderr.
    static func error(_ text: String) { write("MonkeyDocument: " + text, to: STDERR_FILENO) }

    /// The text with line breaks shown as `\n` and `\r`, so that it fits on one line.
    static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "\n", with: "\\n")
            .replacingOccurrences(of: "\r", with: "\\r")
    }

    private static func write(_ text: String, to fd: Int32) {
        let bytes = Array((text + "\n").utf8)
        lock.withLock { _ in
            var offset = 0
            while offset < bytes.count {
                let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return }
                offset += n
            }
        }
    }
}
