// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport

/// Many coordinated readers and writers on many files across several processes, through the
/// daemon and without it: no two writers ever overlap and no reader overlaps a writer (checked
/// from the accessors' own timestamps), and every operation completes (nothing deadlocks).
/// Bounded by default; UBIQUITY_RUN_SLOW_TESTS=1 runs the full 8 processes × 125 operations ×
/// 100 files of docs/benchmarks.md.
@Suite("Coordination stress", .serialized)
struct StressTests {
    static let slow = ProcessInfo.processInfo.environment["UBIQUITY_RUN_SLOW_TESTS"] != nil

    @discardableResult
    func stress(daemon useDaemon: Bool, coordinated: Bool = true) throws -> Int {
        let device = Device()
        let daemon = useDaemon ? try device.startDaemon() : nil
        defer { daemon?.kill(SIGTERM) }
        let processes = Self.slow ? 8 : 4, ops = Self.slow ? 125 : 40, files = Self.slow ? 100 : 10
        let dir = device.root.appendingPathComponent("files")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        for i in 0..<files { try Data().write(to: dir.appendingPathComponent("f\(i)")) }
        let workers = try (0..<processes).map { i in
            try device.start(Binaries.bench, ["stress-worker", "--dir", dir.path, "--files", "\(files)", "--ops", "\(ops)",
                                              "--threads", "8", "--log", device.root.appendingPathComponent("log\(i)").path]
                                              + (coordinated ? [] : ["--uncoordinated"]),
                             extraEnvironment: useDaemon ? [:] : ["UBIQUITY_COORDINATION": "local"])
        }
        for worker in workers { #expect(worker.wait(seconds: 300) == 0, "a worker failed or hung: \(worker.output)") }
        if useDaemon { #expect(workers.allSatisfy { $0.output.contains { $0.contains("daemon true") } }) }
        var byFile: [Int: [(write: Bool, start: UInt64, end: UInt64)]] = [:]
        var total = 0
        for i in 0..<processes {
            let text = try String(contentsOfFile: device.root.appendingPathComponent("log\(i)").path, encoding: .utf8)
            for line in text.split(separator: "\n") {
                let f = line.split(separator: " ")
                byFile[Int(f[1])!, default: []].append((f[0] == "w", UInt64(f[2])!, UInt64(f[3])!))
                total += 1
            }
        }
        #expect(total == processes * ops)
        var violations = 0
        for (_, accesses) in byFile {
            let sorted = accesses.sorted { $0.start < $1.start }
            for (i, a) in sorted.enumerated() {
                for b in sorted[(i + 1)...] {
                    if b.start >= a.end { break }
                    if a.write || b.write { violations += 1 }
                }
            }
        }
        if coordinated { #expect(violations == 0) }
        return violations
    }

    @Test("through the daemon") func throughDaemon() throws { try stress(daemon: true) }
    @Test("control: the same load without coordination does overlap, so the checker can fail")
    func control() throws { #expect(try stress(daemon: false, coordinated: false) > 0) }
    @Test("without the daemon (inter-process locks)") func withoutDaemon() throws { try stress(daemon: false) }
}
