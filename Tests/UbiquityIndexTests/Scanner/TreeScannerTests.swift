import Foundation
import Glibc
import Testing
import UbiquityCore
@testable import UbiquityIndex
import UbiquityStore

@Suite struct TreeScannerTests {
    private func scanAll(_ root: String, scanner: TreeScanner = TreeScanner(), rules: IgnoreRules = .defaults)
        throws -> (records: [IndexRecord], summary: ScanSummary, batches: Int) {
        var records: [IndexRecord] = []
        var batches = 0
        let summary = try scanner.scan(root: root, ignoring: rules) { batch in
            records += batch
            batches += 1
        }
        return (records.sorted { $0.path < $1.path }, summary, batches)
    }

    @Test func walksNestedFoldersWithoutFollowingSymlinks() throws {
        let tree = ScanTestTree()
        defer { tree.remove() }
        tree.file("a.txt", "hello")
        tree.file("docs/b.md")
        tree.file("docs/deep/er/c.pdf")
        tree.folder("empty")
        tree.folder("elsewhere/inner")
        tree.file("elsewhere/inner/not-here.txt")
        tree.symlink("docs/link", to: tree.path("elsewhere"))
        tree.symlink("dangling.txt", to: "/nonexistent/target")

        let (records, summary, _) = try scanAll(tree.root)
        let relative = records.map { String($0.path.dropFirst(tree.root.count + 1)) }
        #expect(relative == [
            "a.txt", "dangling.txt", "docs", "docs/b.md", "docs/deep", "docs/deep/er", "docs/deep/er/c.pdf", "docs/link",
            "elsewhere", "elsewhere/inner", "elsewhere/inner/not-here.txt", "empty",
        ])
        #expect(summary.itemCount == 12 && summary.directoryCount == 6)
        #expect(summary.warnings.isEmpty)
        let byName = Dictionary(uniqueKeysWithValues: records.map { ($0.name, $0) })
        #expect(byName["a.txt"]?.size == 5)
        #expect(byName["a.txt"]?.contentType == "public.plain-text")
        #expect(byName["docs"]?.isDirectory == true && byName["docs"]?.size == 0)
        #expect(byName["docs"]?.contentType == ContentType.folder)
        // A symbolic link is an item of its own (lstat), never followed.
        #expect(byName["link"]?.isDirectory == false)
        #expect(byName["dangling.txt"]?.contentType == "public.plain-text")
        var st = stat()
        #expect(lstat(tree.path("a.txt"), &st) == 0)
        #expect(byName["a.txt"]?.inode == UInt64(st.st_ino))
        #expect(byName["a.txt"]?.mtimeNanoseconds == Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec))
    }

    @Test func batchesAreBounded() throws {
        let tree = ScanTestTree()
        defer { tree.remove() }
        for i in 0..<25 { tree.file("f\(i)") }
        var sizes: [Int] = []
        _ = try TreeScanner(batchSize: 10).scan(root: tree.root, ignoring: .defaults) { sizes.append($0.count) }
        #expect(sizes == [10, 10, 5])
    }

    @Test func skipsIgnoredNamesAndFolders() throws {
        let tree = ScanTestTree()
        defer { tree.remove() }
        tree.file("keep.txt")
        tree.file(".keep.txt.swp")
        tree.file("backup~")
        tree.file("build/out.o")
        tree.file("src/build/keep.c")
        tree.file("cache/x")
        let rules = IgnoreRules(patterns: IgnoreRules.defaultPatterns + ["/build/", "cache"])
        let names = try scanAll(tree.root, rules: rules).records.map { String($0.path.dropFirst(tree.root.count + 1)) }
        #expect(names == ["keep.txt", "src", "src/build", "src/build/keep.c"])
        // The same rules relative to a subtree scan.
        var sub: [String] = []
        _ = try TreeScanner().scan(root: tree.path("src"), ignoring: IgnoreRules(patterns: ["src/build/"]),
                                   relativePrefix: "src") { sub += $0.map(\.name) }
        #expect(sub.isEmpty)
    }

    @Test func namesWithNewlinesAndUnicode() throws {
        let tree = ScanTestTree()
        defer { tree.remove() }
        tree.file("line\nbreak.txt")
        tree.file("Résumé 🎉.md")
        let names = Set(try scanAll(tree.root).records.map(\.name))
        #expect(names == ["line\nbreak.txt", "Résumé 🎉.md"])
    }

    @Test func invalidUTF8NamesAreSkippedAndReported() throws {
        let tree = ScanTestTree()
        defer { tree.remove() }
        tree.file("good.txt")
        for suffix: UInt8 in [0x31, 0x32] {
            var bytes = Array((tree.root + "/bad-").utf8)
            bytes += [0xFF, 0xFE, suffix, 0]
            let fd = bytes.withUnsafeBufferPointer { buffer in
                buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: bytes.count) { open($0, O_CREAT | O_WRONLY, 0o644) }
            }
            #expect(fd >= 0)
            close(fd)
        }
        var scanner = TreeScanner()
        scanner.maximumInvalidNameWarnings = 1
        let (records, summary, _) = try scanAll(tree.root, scanner: scanner)
        #expect(records.map(\.name) == ["good.txt"])
        #expect(summary.invalidNameCount == 2)
        #expect(summary.warnings.count == 1)
        let warning = try #require(summary.warnings.first)
        #expect(warning.kind == .invalidName)
        #expect(warning.path.hasPrefix(tree.root + "/bad-\\xFF\\xFE"))
    }

    @Test func unreadableFolderIsSkippedWithAWarning() throws {
        let tree = ScanTestTree()
        defer { tree.remove() }
        tree.file("open/a.txt")
        tree.file("locked/secret.txt")
        var scanner = TreeScanner()
        if geteuid() == 0 {
            // Root ignores permissions: simulate the failure the kernel would report.
            scanner.simulatedOpenErrors[tree.path("locked")] = EACCES
        } else {
            chmod(tree.path("locked"), 0)
        }
        let (records, summary, _) = try scanAll(tree.root, scanner: scanner)
        let names = records.map { String($0.path.dropFirst(tree.root.count + 1)) }
        #expect(names == ["locked", "open", "open/a.txt"])
        #expect(summary.warnings == [ScanWarning(kind: .permissionDenied, path: tree.path("locked"),
                                                 message: "The folder cannot be read; its contents are not indexed")])
    }

    @Test func foldersDeletedMidScanAreSkipped() throws {
        let tree = ScanTestTree()
        defer { tree.remove() }
        tree.file("a/1")
        tree.file("b/2")
        tree.file("c/3")
        var seen: [String] = []
        var deleted = false
        let summary = try TreeScanner(batchSize: 1).scan(root: tree.root, ignoring: .defaults) { batch in
            seen += batch.map(\.name)
            if !deleted {
                // The root's entries are read first; delete every folder before it is opened.
                deleted = true
                for name in ["a", "b", "c"] { tree.delete(name) }
            }
        }
        #expect(summary.warnings.isEmpty)
        #expect(summary.vanishedCount >= 2)
        #expect(!seen.contains("1") && !seen.contains("2") && !seen.contains("3"))
    }

    @Test func vanishedAndSimulatedErrorsOnSubfolders() throws {
        let tree = ScanTestTree()
        defer { tree.remove() }
        tree.file("gone/x")
        tree.file("broken/y")
        var scanner = TreeScanner()
        scanner.simulatedOpenErrors = [tree.path("gone"): ENOENT, tree.path("broken"): EIO]
        let (records, summary, _) = try scanAll(tree.root, scanner: scanner)
        #expect(records.map(\.name) == ["broken", "gone"])
        #expect(summary.vanishedCount == 1)
        #expect(summary.warnings.map(\.kind) == [.ioError])
    }

    @Test func missingRootThrows() {
        #expect(throws: UbiquityError.self) {
            _ = try TreeScanner().scan(root: "/nonexistent/\(UUID().uuidString)", ignoring: .defaults) { _ in }
        }
    }

    @Test func recordAtPath() throws {
        let tree = ScanTestTree()
        defer { tree.remove() }
        tree.file("doc.json", "{}")
        tree.symlink("ln", to: tree.path("doc.json"))
        let record = try #require(TreeScanner.record(at: tree.path("doc.json")))
        #expect(record.name == "doc.json" && record.size == 2 && record.contentType == "public.json")
        #expect(!record.isDirectory)
        let link = try #require(TreeScanner.record(at: tree.path("ln")))
        #expect(link.inode != record.inode)
        #expect(TreeScanner.record(at: tree.path("missing")) == nil)
        #expect(TreeScanner.record(at: tree.root + "/")?.isDirectory == true)
    }
}

@Suite struct IgnoreMatcherTests {
    @Test func agreesWithIgnoreRules() {
        let rules = IgnoreRules(patterns: IgnoreRules.defaultPatterns + ["/build/", "cache", "docs/*.tmp", "*.log/", "a/b/c"])
        let cases: [(String, Bool)] = [
            ("build", true), ("build", false), ("src/build", true), ("cache", false), ("x/cache", true),
            ("docs/x.tmp", false), ("other/docs/x.tmp", false), ("x.swp", false), (".x.swp", false),
            ("4913", false), ("run.log", true), ("run.log", false), ("a/b/c", false), ("a/b/c/d", false),
            ("notes.txt", false), (".DS_Store", false), ("sub/#draft#", false),
        ]
        let matcher = IgnoreMatcher(rules)
        for (relative, isDirectory) in cases {
            let name = IndexRecord.lastComponent(of: relative)
            let expected = rules.isIgnored(name: name, relativePath: relative, isDirectory: isDirectory)
            let actual = name.withCString { matcher.isIgnored(name: $0, relativePath: relative, isDirectory: isDirectory) }
            #expect(actual == expected, "\(relative) dir=\(isDirectory)")
        }
    }
}
