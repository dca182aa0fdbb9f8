// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Ubiquity
import UbiquityCore
import UbiquityStore

/// Metadata query figures measured inside one process (no process start-up in the numbers):
/// `query-latency` (write a file → the query's did-update), `name-query` (substring search
/// over N names in the SQLite index).
enum QueryBench {
    /// Runs an async body from the synchronous `main`.
    static func block(_ body: @escaping @Sendable () async throws -> Void) throws {
        let done = DispatchSemaphore(value: 0)
        let failure = UncheckedFailure()
        Task {
            do { try await body() } catch { failure.error = error }
            done.signal()
        }
        done.wait()
        if let error = failure.error { throw error }
    }

    /// `query-latency --writes N [--dir DIR]`: a MetadataQuery on DIR (in this process, or via
    /// the daemon when one runs), then N files written 50 ms apart; prints p50/p99 in µs.
    static func latency(_ options: Options) throws {
        let writes = options.int("writes", 200)
        let dir = options.string("dir", NSTemporaryDirectory() + "ubiq-latency-\(getpid())")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try block {
            let query = MetadataQuery()
            query.predicate = try QueryPredicate(format: "kMDItemFSName LIKE '*'")
            query.searchScopes = [dir]
            var steps = query.snapshots().makeAsyncIterator()
            guard query.start() else { throw query.lastError ?? UbiquityError(.invalidArgument, "no start") }
            while let step = await steps.next() {
                if case .didFinishGathering = step.kind { break }
            }
            var samples = Samples()
            for index in 0..<writes {
                let name = "file-\(index).txt"
                let fd = open(dir + "/" + name, O_CREAT | O_WRONLY | O_TRUNC, 0o644)
                let start = DispatchTime.now().uptimeNanoseconds
                _ = write(fd, "x", 1)
                close(fd)
                while let step = await steps.next() {
                    if step.added.contains(where: { $0.record.name == name }) || step.changed.contains(where: { $0.record.name == name }) {
                        samples.add(DispatchTime.now().uptimeNanoseconds - start)
                        break
                    }
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            query.stop()
            print(String(format: "query-latency writes=%d p50=%.0fus p99=%.0fus max=%.0fus", writes,
                         samples.percentile(0.5), samples.percentile(0.99), samples.percentile(1.0)))
        }
    }

    /// `name-query --names N [--database FILE]`: fills an index with N synthetic names (words
    /// from a fixed list, seeded), then times substring queries for several needles.
    static func names(_ options: Options) throws {
        let count = options.int("names", 1_000_000)
        let path = options.string("database", NSTemporaryDirectory() + "ubiq-names-\(getpid()).sqlite")
        defer { if !options.flag("keep") { for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) } } }
        let index = try MetadataIndex(path: path, logger: Logger(label: "bench"))
        let words = ["report", "invoice", "photo", "notes", "draft", "budget", "summary", "letter", "meeting", "holiday",
                     "project", "design", "backup", "archive", "scan", "receipt", "contract", "thesis", "chapter", "recipe"]
        let extensions = ["txt", "pdf", "md", "jpg", "docx", "csv"]
        if try index.count(under: "/names") < count {
            var generator = SeededRandom(seed: 42)
            let start = DispatchTime.now().uptimeNanoseconds
            var batch: [IndexRecord] = []
            for item in 0..<count {
                let a = words[Int(generator.next() % UInt64(words.count))], b = words[Int(generator.next() % UInt64(words.count))]
                let name = "\(a)-\(b)-\(item).\(extensions[Int(generator.next() % UInt64(extensions.count))])"
                batch.append(IndexRecord(path: "/names/d\(item / 500)/\(name)", name: name, size: Int64(item), creationDate: nil,
                                         contentChangeDate: Date(), contentType: ContentType.identifier(forFileName: name, isDirectory: false),
                                         isDirectory: false, inode: UInt64(item + 1), mtimeNanoseconds: 1, ctimeNanoseconds: 1))
                if batch.count == 10_000 {
                    _ = try index.apply(batch)
                    batch.removeAll(keepingCapacity: true)
                }
            }
            _ = try index.apply(batch)
            print(String(format: "name-query built %d names in %.1f s", count, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9))
        }
        for needle in ["zzq", "mmer", "-12345.", "ipe-sum", "hesis-ch", "receipt", "port"] {
            let predicate = try QueryPredicate(format: "kMDItemFSName CONTAINS %@", needle)
            var samples = Samples()
            var found = 0
            for _ in 0..<options.int("runs", 10) {
                let start = DispatchTime.now().uptimeNanoseconds
                found = try index.query(predicate, under: []).count
                samples.add(DispatchTime.now().uptimeNanoseconds - start)
            }
            print(String(format: "name-query needle=%@ matches=%d p50=%.2fms", needle, found, samples.percentile(0.5) / 1000))
        }
    }
}


/// An error handed back from a task. `@unchecked Sendable`: written before the semaphore
/// signals, read after it.
final class UncheckedFailure: @unchecked Sendable {
    var error: (any Error)?
}
