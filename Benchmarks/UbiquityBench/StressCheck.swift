// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Reads stress-worker logs and counts overlaps: a writer overlapping anything on the same file,
/// or a reader overlapping a writer. Prints a summary line; exits 1 on any violation.
enum StressCheck {
    static func run(_ logs: [String]) throws {
        var byFile: [Substring: [(write: Bool, start: UInt64, end: UInt64)]] = [:]
        var total = 0, readerOverlaps = 0
        for log in logs {
            for line in try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n") {
                let f = line.split(separator: " ")
                guard f.count >= 4, let start = UInt64(f[2]), let end = UInt64(f[3]) else { continue }
                byFile[f[1], default: []].append((f[0] == "w", start, end))
                total += 1
            }
        }
        var violations = 0
        for accesses in byFile.values {
            let sorted = accesses.sorted { $0.start < $1.start }
            for (i, a) in sorted.enumerated() {
                for b in sorted[(i + 1)...] {
                    if b.start >= a.end { break }
                    if a.write || b.write { violations += 1 } else { readerOverlaps += 1 }
                }
            }
        }
        print("accesses \(total) files \(byFile.count) violations \(violations) concurrent-reader-pairs \(readerOverlaps)")
        exit(violations == 0 ? 0 : 1)
    }
}
