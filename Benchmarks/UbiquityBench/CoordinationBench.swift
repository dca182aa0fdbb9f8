// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Ubiquity

/// Coordinated write round trip with one presenter, against taking and releasing an `flock` on
/// the same file, in the same run. With `--presenter-in-process` the presenter lives in this
/// process (no daemon: set UBIQUITY_COORDINATION=local); otherwise a presenter must be running
/// elsewhere (scripts/bench starts `ubiq present --auto-ack FILE` and `ubiq daemon`).
enum CoordinationBench {
    final class Presenter: FilePresenter {
        let presentedItemURL: URL?
        let presentedItemOperationQueue: OperationQueue = {
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 1
            return queue
        }()
        init(_ url: URL) { presentedItemURL = url }
    }

    /// Registers a presenter that relinquishes at once and prints nothing, then waits forever.
    static func present(_ options: Options) -> Never {
        let presenter = Presenter(URL(fileURLWithPath: options.string("file")))
        FileCoordinator.addFilePresenter(presenter)
        FileHandle.standardOutput.write(Data("ready daemon \(FileCoordinator.isUsingCoordinationService)\n".utf8))
        while true { sleep(3600) }
    }

    static func run(_ options: Options) throws {
        let iterations = options.int("iterations", 2000)
        let file = URL(fileURLWithPath: options.string("file"))
        if !FileManager.default.fileExists(atPath: file.path) { try Data("x".utf8).write(to: file) }
        if options.flag("presenter-in-process") { FileCoordinator.addFilePresenter(Presenter(file)) }

        var flockSamples = Samples(), coordinationSamples = Samples()
        let fd = open(file.path, O_RDONLY)
        for round in 0..<(iterations + iterations / 10) {
            let warm = round >= iterations / 10
            let t0 = monotonicNanoseconds()
            flock(fd, LOCK_EX)
            flock(fd, LOCK_UN)
            let t1 = monotonicNanoseconds()
            try FileCoordinator().coordinate(writingItemAt: file) { _ in }
            let t2 = monotonicNanoseconds()
            if warm {
                flockSamples.add(t1 - t0)
                coordinationSamples.add(t2 - t1)
            }
        }
        close(fd)
        let label = options.string("label", FileCoordinator.isUsingCoordinationService ? "daemon" : "in-process")
        let p50 = coordinationSamples.percentile(0.5), p99 = coordinationSamples.percentile(0.99)
        let f50 = flockSamples.percentile(0.5), f99 = flockSamples.percentile(0.99)
        print(String(format: "| %@ | %d | %.1f µs | %.1f µs | %.2f µs | %.2f µs | %.0f× | %.0f× |",
                     label, iterations, p50, p99, f50, f99, p50 / max(f50, 0.001), p99 / max(f99, 0.001)))
    }
}
