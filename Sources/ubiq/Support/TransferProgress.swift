// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// The progress line of a long transfer (`ubiq download`, `get`, `put`, `evict`): a bar, the
/// percentage, bytes done of the total, the rate and the time left, redrawn at most ten times a
/// second. A value with no I/O: ``ProgressDisplay`` draws it.
struct TransferProgress: Sendable {
    /// What is shown first (a file's name).
    var name: String
    /// All the bytes to move (0: unknown; then no percentage or time left).
    var total: Int64
    /// When it started, in seconds (any clock, the same as the updates').
    let start: Double
    /// The bytes done so far.
    private(set) var done: Int64 = 0
    private var lastDrawn: Double = -.infinity

    /// The least time between two redraws, in seconds.
    static let redrawInterval = 0.1

    /// A transfer of `total` bytes starting at `start`.
    init(name: String, total: Int64, start: Double) {
        self.name = name
        self.total = total
        self.start = start
    }

    /// Notes `done` bytes at `now`; returns the line to draw when it is time to redraw (the
    /// first update, every ``redrawInterval``, and the last byte), else nil.
    mutating func update(done: Int64, now: Double) -> String? {
        self.done = max(self.done, done)
        let finished = total > 0 && self.done >= total
        guard finished || now - lastDrawn >= Self.redrawInterval else { return nil }
        lastDrawn = now
        return line(now: now)
    }

    /// The line at `now`: `NAME  [#####     ] 50%  5.0 MB / 10.0 MB  2.5 MB/s  2s left`.
    func line(now: Double) -> String {
        let elapsed = max(now - start, 0)
        let rate = elapsed > 0.05 ? Double(done) / elapsed : 0
        var parts = [name]
        if total > 0 {
            let fraction = min(1, Double(done) / Double(total))
            let width = 20
            let filled = Int(fraction * Double(width))
            parts.append("[" + String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled) + "] \(Int(fraction * 100))%")
            parts.append(Self.bytes(done) + " / " + Self.bytes(total))
        } else {
            parts.append(Self.bytes(done))
        }
        if rate > 0 {
            parts.append(Self.bytes(Int64(rate)) + "/s")
            if total > done { parts.append(Self.duration(Double(total - done) / rate) + " left") }
        }
        return parts.joined(separator: "  ")
    }

    /// A byte count as people read it (Foundation's file-style formatter: `1.5 MB`).
    static func bytes(_ count: Int64) -> String {
        ByteCountFormatter.string(fromByteCount: count, countStyle: .file)
    }

    /// Seconds as `42s`, `3m 05s` or `2h 10m`.
    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite else { return "?" }
        let whole = Int(seconds.rounded(.up))
        if whole < 60 { return "\(whole)s" }
        if whole < 3600 { return "\(whole / 60)m " + String(format: "%02ds", whole % 60) }
        return "\(whole / 3600)h " + String(format: "%02dm", (whole % 3600) / 60)
    }
}

/// Draws ``TransferProgress`` lines on stdout when it is a terminal (with `NO_COLOR` unset and
/// `TERM` not `dumb`, ``Terminal``'s rule), and nothing otherwise, as the CLI's conventions say
/// (`docs/cli.md`). One line, redrawn in place, cleared at the end.
final class ProgressDisplay: @unchecked Sendable {
    /// Whether progress is drawn: stdout is a terminal.
    let enabled: Bool
    private let lock = NSLock()
    private var progress: TransferProgress?

    /// A display; `quiet` (JSON output, stdout carrying data) turns it off.
    init(quiet: Bool = false, environment: [String: String] = ProcessInfo.processInfo.environment) {
        enabled = !quiet && Terminal.colorEnabled(environment: environment)
    }

    /// Shows that `name` moved `done` of `total` bytes (a new name starts a new transfer).
    func update(_ name: String, done: Int64, total: Int64) {
        guard enabled else { return }
        let now = Self.now()
        lock.lock()
        defer { lock.unlock() }
        if progress?.name != name || progress?.total != total { progress = TransferProgress(name: name, total: total, start: now) }
        if let line = progress?.update(done: done, now: now) { CLI.printRaw("\r\u{1B}[K" + line) }
    }

    /// Clears the line (before the result is printed).
    func finish() {
        guard enabled else { return }
        lock.lock()
        defer { lock.unlock() }
        if progress != nil { CLI.printRaw("\r\u{1B}[K") }
        progress = nil
    }

    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
