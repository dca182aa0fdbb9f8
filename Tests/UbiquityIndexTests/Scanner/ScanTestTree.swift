import Foundation
import Glibc

/// A unique temporary folder for a scanner or indexer test, removed on `remove()`.
struct ScanTestTree {
    let root: String

    init() {
        let path = "/tmp/ubiq-scan-test-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        root = path
    }

    func path(_ relative: String) -> String { root + "/" + relative }

    func folder(_ relative: String) {
        try! FileManager.default.createDirectory(atPath: path(relative), withIntermediateDirectories: true)
    }

    func file(_ relative: String, _ contents: String = "x") {
        let full = path(relative)
        try! FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent,
                                                 withIntermediateDirectories: true)
        precondition(FileManager.default.createFile(atPath: full, contents: Data(contents.utf8)))
    }

    func symlink(_ relative: String, to target: String) {
        precondition(Glibc.symlink(target, path(relative)) == 0)
    }

    func delete(_ relative: String) { try? FileManager.default.removeItem(atPath: path(relative)) }

    func remove() {
        // Restore permissions a test may have taken away, then delete.
        _ = try? FileManager.default.subpathsOfDirectory(atPath: root).forEach { chmod(path($0), 0o755) }
        try? FileManager.default.removeItem(atPath: root)
    }
}
