// SPDX-License-Identifier: Apache-2.0
import Foundation
import Ubiquity

/// `UbiquityBench MODE [options]`: the measurements behind docs/benchmarks.md and the
/// cross-process stress worker used by the tests. Run through scripts/bench.
@main
enum UbiquityBench {
    static func main() throws {
        var arguments = Array(CommandLine.arguments.dropFirst())
        guard !arguments.isEmpty else { usage() }
        let mode = arguments.removeFirst()
        let options = Options(arguments)
        switch mode {
        case "stress-worker": try StressWorker.run(options)
        case "coordination": try CoordinationBench.run(options)
        case "document-save": try DocumentSaveBench.run(options)
        case "stress-check": try StressCheck.run(arguments)
        case "query-latency": try QueryBench.latency(options)
        case "name-query": try QueryBench.names(options)
        case "records-load": try RecordsBench.load(options)
        case "records-query": try RecordsBench.query(options)
        case "records-baseline": try RecordsBench.baseline(options)
        case "records-baseline-query": try RecordsBench.baselineQuery(options)
        case "records-sql": RecordsBench.sql(options)
        case "records-phases": try RecordsBenchPhases.run(options)
        case "records-sql-variants": try RecordsBenchPhases.sqlVariants(options)
        case "presenter": CoordinationBench.present(options)
        case "add-conflict":
            // Test helper: adds a conflict version in this process (as sync will), so that
            // presenters elsewhere hear of it through the daemon.
            let version = try FileVersion.addConflictVersion(
                ofItemAt: URL(fileURLWithPath: options.string("file")),
                withContentsOf: URL(fileURLWithPath: options.string("contents")), savingComputerName: "bench")
            print(version.persistentIdentifier)
        default: usage()
        }
    }

    static func usage() -> Never {
        FileHandle.standardError.write(Data("""
            usage: UbiquityBench stress-worker --dir DIR --files N --ops M --threads T --log FILE
                   UbiquityBench coordination --iterations N [--label L] [--presenter-in-process]
                   UbiquityBench document-save --mib N [--runs R] --dir DIR
                   UbiquityBench stress-check LOG...
                   UbiquityBench query-latency [--writes N] [--dir DIR]
                   UbiquityBench name-query [--names N] [--runs R] [--database FILE] [--keep]
                   UbiquityBench records-load --url U --api T --web W [--records N] [--start S] [--batch B] [--clients C] [--database private|public]
                   UbiquityBench records-query --url U --api T --web W [--kind equality|near] [--requests N] [--limit L]
                   UbiquityBench records-baseline [--rows N] [--batch B] [--file PATH]
                   UbiquityBench records-baseline-query --file PATH [--kind equality|near] [--requests N]
                   UbiquityBench records-sql [--rows N] [--batch B] [--multi]   (SQL for psql on stdout)
                   UbiquityBench records-phases [--database URL] [--records N] [--clients C]
                   UbiquityBench records-sql-variants [--records N] [--variants store,lean-statements,no-system-index,plain]
                   UbiquityBench presenter --file FILE   (a silent presenter until killed)
                   UbiquityBench add-conflict --file FILE --contents OTHER

            """.utf8))
        exit(64)
    }
}

/// `--name value` options.
struct Options {
    private var values: [String: String] = [:]
    private var flags: Set<String> = []
    init(_ arguments: [String]) {
        var index = 0
        while index < arguments.count {
            let key = arguments[index].trimmingCharacters(in: CharacterSet(charactersIn: "-"))
            if index + 1 < arguments.count, !arguments[index + 1].hasPrefix("--") {
                values[key] = arguments[index + 1]
                index += 2
            } else {
                flags.insert(key)
                index += 1
            }
        }
    }
    func string(_ key: String, _ fallback: String? = nil) -> String {
        guard let value = values[key] ?? fallback else {
            FileHandle.standardError.write(Data("missing --\(key)\n".utf8))
            exit(64)
        }
        return value
    }
    func int(_ key: String, _ fallback: Int) -> Int { values[key].flatMap(Int.init) ?? fallback }
    func flag(_ key: String) -> Bool { flags.contains(key) }
}

/// Percentiles of nanosecond samples.
struct Samples {
    var values: [UInt64] = []
    mutating func add(_ value: UInt64) { values.append(value) }
    func percentile(_ p: Double) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1000
    }
}

@inline(__always) func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}
