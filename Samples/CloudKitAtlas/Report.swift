// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// The sample's output: one whole line per step on stdout (`ok STEP: DETAIL` / `FAIL STEP:
/// REASON`, or a JSON object with --json), written at once and unbuffered, so that a test or a
/// pipe sees each step as it ends. Errors about the command line go to stderr.
@MainActor
final class Report {
    /// Whether lines are JSON objects.
    let json: Bool
    /// How many steps failed so far.
    private(set) var failures = 0
    /// How many steps passed so far.
    private(set) var passed = 0

    init(json: Bool) {
        self.json = json
    }

    /// A step that passed.
    func ok(_ step: String, _ detail: String) {
        passed += 1
        line(step: step, ok: true, text: detail)
    }

    /// A step that failed.
    func fail(_ step: String, _ reason: String) {
        failures += 1
        line(step: step, ok: false, text: reason)
    }

    private func line(step: String, ok: Bool, text: String) {
        let oneLine = text.replacingOccurrences(of: "\n", with: " ")
        if json {
            struct Line: Encodable {
                let step: String
                let ok: Bool
                let detail: String
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let data = (try? encoder.encode(Line(step: step, ok: ok, detail: oneLine))) ?? Data()
            Self.write(String(decoding: data, as: UTF8.self), to: STDOUT_FILENO)
        } else {
            Self.write("\(ok ? "ok" : "FAIL") \(step): \(oneLine)", to: STDOUT_FILENO)
        }
    }

    /// Writes the usage text to stdout.
    nonisolated static func usage(_ text: String) { write(text, to: STDOUT_FILENO) }

    /// Writes `CloudKitAtlas: text` to stderr.
    nonisolated static func error(_ text: String) { write("CloudKitAtlas: " + text, to: STDERR_FILENO) }

    private nonisolated static func write(_ text: String, to fd: Int32) {
        let bytes = Array((text + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return }
            offset += n
        }
    }
}
