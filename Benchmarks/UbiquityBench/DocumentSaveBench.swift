// SPDX-License-Identifier: Apache-2.0
import Foundation
import Ubiquity

/// Document save (coordinated write, safe-save: temp file, fsync, rename, folder fsync) of N MiB,
/// against `cp` of the same bytes and `dd conv=fsync` (a copy that also fsyncs), same run.
enum DocumentSaveBench {
    /// A document whose contents are a fixed blob.
    final class BlobDocument: Document, @unchecked Sendable {  // @unchecked: `blob` is immutable
        let blob: Data
        init(fileURL: URL, blob: Data) {
            self.blob = blob
            super.init(fileURL: fileURL)
        }
        override func contents(forType typeName: String) throws -> Any { blob }
        override func load(fromContents contents: Any, ofType typeName: String?) throws {}
    }

    static func run(_ options: Options) throws {
        let mib = options.int("mib", 1), runs = options.int("runs", 11)
        let dir = URL(fileURLWithPath: options.string("dir")).appendingPathComponent("save-\(mib)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var blob = Data(count: mib << 20)
        blob.withUnsafeMutableBytes { raw in
            var state: UInt64 = 0x9E37_79B9_7F4A_7C15
            for i in stride(from: 0, to: raw.count, by: 8) {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                withUnsafeBytes(of: state) { bytes in
                    for j in 0..<min(8, raw.count - i) { raw[i + j] = bytes[j] }
                }
            }
        }
        let source = dir.appendingPathComponent("source.bin")
        try blob.write(to: source)
        let target = dir.appendingPathComponent("doc.bin")
        let document = BlobDocument(fileURL: target, blob: blob)

        var saves = Samples(), copies = Samples(), syncedCopies = Samples()
        for run in 0..<runs {
            let done = DispatchSemaphore(value: 0)
            let ok = OKBox()
            let t0 = monotonicNanoseconds()
            document.save(to: target, for: run == 0 ? .forCreating : .forOverwriting) { success in
                ok.value = success
                done.signal()
            }
            done.wait()
            let t1 = monotonicNanoseconds()
            guard ok.value else { throw UbiquityError(.io, "document save failed: \(String(describing: document.lastError))") }
            saves.add(t1 - t0)
            copies.add(try time("/bin/cp", [source.path, dir.appendingPathComponent("cp.bin").path]))
            syncedCopies.add(try time("/bin/dd", ["if=\(source.path)", "of=\(dir.appendingPathComponent("dd.bin").path)",
                                                  "bs=1M", "conv=fsync", "status=none"]))
        }
        let s = saves.percentile(0.5), c = copies.percentile(0.5), d = syncedCopies.percentile(0.5)
        print(String(format: "| %d MiB | %.2f ms | %.2f ms | %.2f× | %.2f ms | %.2f× |", mib, s / 1000, c / 1000, s / c, d / 1000, s / d))
        try? FileManager.default.removeItem(at: dir)
    }

    /// Wall time of a whole command, process start included (as when a user runs it), started
    /// with posix_spawn: Foundation's Process takes tens of milliseconds to start a child here.
    static func time(_ executable: String, _ arguments: [String]) throws -> UInt64 {
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let t0 = monotonicNanoseconds()
        let rc = posix_spawn(&pid, executable, nil, nil, argv, environ)
        guard rc == 0 else { throw UbiquityError.posix("posix_spawn", path: executable, errno: rc) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return monotonicNanoseconds() - t0
    }

    final class OKBox: @unchecked Sendable {  // @unchecked: written before the semaphore signal, read after the wait
        var value = false
    }
}
