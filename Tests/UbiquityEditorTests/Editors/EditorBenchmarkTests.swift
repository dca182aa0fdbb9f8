// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport

/// The figure "editor save to remote buffer reload": from sending `:w` to vim on device A until
/// vim's buffer on device B holds the change (its plugin's UbiquityReloaded), over
/// UBIQUITY_EDITOR_BENCH runs (e.g. 10). Prints the samples and the median; asserts nothing
/// about time. Run by Benchmarks/editors/run.
@Suite(.serialized) struct EditorBenchmarkTests {
    static var runs: Int { Int(ProcessInfo.processInfo.environment["UBIQUITY_EDITOR_BENCH"] ?? "") ?? 0 }

    @Test(.enabled(if: runs > 0 && EditorRig.available("vim"), "UBIQUITY_EDITOR_BENCH=N runs it\(EditorRig.missing("vim"))"))
    func saveToRemoteReload() throws {
        let rig = try EditorEndToEndTests.Rig()
        try EditorEndToEndTests.openBoth(rig, .vim, .vim)
        var samples: [Double] = []
        var text = "one"
        for run in 1...Self.runs {
            let line = "run \(run)"
            rig.a.keys("Escape")
            rig.a.type("gg")
            rig.a.type("O" + line)
            rig.a.keys("Escape")
            text = line + "\n" + text
            let before = rig.b.dumps().count
            let start = Date()
            rig.a.command("w")
            guard rig.b.waitForDump("B reloads run \(run)", after: before, EditorEndToEndTests.isReload(of: text)) != nil else { break }
            samples.append(Date().timeIntervalSince(start) * 1000)
            // let both daemons settle before the next save (the upload's journal write, the state poll)
            _ = EditorRig.eventually("A uploaded") { rig.a.syncStatus("notes.txt") == "uploaded" }
            usleep(300_000)
        }
        let sorted = samples.sorted()
        guard !sorted.isEmpty else { return }
        let median = sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        let rendered = samples.map { String(format: "%.0f", $0) }.joined(separator: " ")
        print("editor-bench: save-to-remote-reload runs=\(samples.count) p50_ms=\(String(format: "%.0f", median)) min_ms=\(String(format: "%.0f", sorted.first!)) max_ms=\(String(format: "%.0f", sorted.last!)) samples_ms=[\(rendered)]")
    }
}
