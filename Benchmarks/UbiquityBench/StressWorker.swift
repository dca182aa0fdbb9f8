// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Ubiquity

/// One process of the coordination stress test: `threads` threads perform `ops` coordinated
/// reads (2/3) and writes (1/3) on `files` files in `dir`, each with a fresh FileCoordinator,
/// and log every accessor's [start, end] (CLOCK_MONOTONIC, comparable across processes) so that
/// the checker can prove no writer overlapped anything.
enum StressWorker {
    static func run(_ options: Options) throws {
        let dir = options.string("dir"), log = options.string("log")
        let files = options.int("files", 100), ops = options.int("ops", 125), threads = options.int("threads", 8)
        let records = Mutex<[String]>([])
        let failures = Mutex<[String]>([])
        let next = Atomic<Int>(0)
        let pid = getpid()
        // --uncoordinated: the control run, which must show overlaps (proves the checker works).
        let uncoordinated = options.flag("uncoordinated")
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            var generator = SystemRandomNumberGenerator()
            while true {
                let op = next.wrappingAdd(1, ordering: .relaxed).oldValue
                guard op < ops else { return }
                let file = Int.random(in: 0..<files, using: &generator)
                let url = URL(fileURLWithPath: "\(dir)/f\(file)")
                let write = Int.random(in: 0..<3, using: &generator) == 0
                let coordinator = FileCoordinator()
                func coordinatedWrite(_ body: (URL) throws -> Void) throws {
                    if uncoordinated { try body(url) } else { try coordinator.coordinate(writingItemAt: url, byAccessor: body) }
                }
                func coordinatedRead(_ body: (URL) throws -> Void) throws {
                    if uncoordinated { try body(url) } else { try coordinator.coordinate(readingItemAt: url, byAccessor: body) }
                }
                do {
                    if write {
                        try coordinatedWrite { url in
                            let start = monotonicNanoseconds()
                            try Data("\(pid) \(op)\n".utf8).write(to: url)
                            usleep(UInt32.random(in: 0...200))
                            records.withLock { $0.append("w \(file) \(start) \(monotonicNanoseconds()) \(pid)") }
                        }
                    } else {
                        try coordinatedRead { url in
                            let start = monotonicNanoseconds()
                            _ = try? Data(contentsOf: url)
                            usleep(UInt32.random(in: 0...200))
                            records.withLock { $0.append("r \(file) \(start) \(monotonicNanoseconds()) \(pid)") }
                        }
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        let lines = records.withLock { $0 }.joined(separator: "\n") + "\n"
        try Data(lines.utf8).write(to: URL(fileURLWithPath: log))
        let failed = failures.withLock { $0 }
        print("ops \(ops) failed \(failed.count) daemon \(FileCoordinator.isUsingCoordinationService)")
        for failure in failed.prefix(5) { FileHandle.standardError.write(Data("failure: \(failure)\n".utf8)) }
        exit(failed.isEmpty ? 0 : 1)
    }
}
