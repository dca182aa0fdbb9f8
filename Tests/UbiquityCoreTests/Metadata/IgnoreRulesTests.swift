// SPDX-License-Identifier: Apache-2.0
import Glibc
import Testing
import UbiquityCore

/// The byte-wise matcher of ``IgnoreRules`` against the former implementation (every pattern
/// through `fnmatch(3)` on the Swift strings), on a table of names and paths.
struct IgnoreRulesTests {
    /// The former `isIgnored`, kept as the reference.
    static func reference(_ patterns: [String], name: String, relativePath: String, isDirectory: Bool) -> Bool {
        for var pattern in patterns {
            if pattern.hasSuffix("/") {
                guard isDirectory else { continue }
                pattern.removeLast()
            }
            let subject = pattern.contains("/") ? relativePath : name
            if pattern.hasPrefix("/") { pattern.removeFirst() }
            if fnmatch(pattern, subject, 0) == 0 { return true }
        }
        return false
    }

    static let extraPatterns = [
        "/build/", "cache", "docs/*.tmp", "*.log/", "a/b/c", "*.o", "data-??.bin", "[Tt]humbs.db", "*.[ch]~",
        "x\\*y", "*mid*dle*", "ab*ab", "é*", "*ü", "日本*.txt", "", "*", "**", "?", "[!a]*", "lit[", "z*[a-c]",
    ]

    static let names = [
        "notes.txt", "file~", ".file.swp", ".file.swx", ".file.swo", ".x.sw", "x.swp", "x.swx", "4913", "49130", ".#lock",
        "#draft#", "#draft", "~$report.docx", ".~lock.doc#", "a.tmp", "a.tmp.txt", "dl.part", "dl.crdownload",
        "x.kate-swp", ".DS_Store", "._resource", ".fuse_hidden0001", ".nfs1234", ".ubiq-tmp-sync-abcd", ".ubiq-tmp-x",
        "..ubiq-tmp-sync-ab.download-cd", ".ubiquity-cookie-1", ".ubiquity-sync.lock", "build", "cache", "run.log",
        "x.o", "data-01.bin", "data-1.bin", "data-001.bin", "Thumbs.db", "thumbs.db", "main.c~", "main.h~", "main.x~",
        "x*y", "xay", "middle", "mid-dle", "mi-ddle", "abab", "ab", "aba", "ababab", "été", "menü", "mü", "日本語.txt",
        "日本", "ü", "é", "a", "b", "", "lit[", "zb", "za", "zd", "naïve file.swp", ".ñ.swp", "x\u{301}.tmp",
        "name with spaces~", "emoji 😀.part", ".😀.swp",
    ]

    static let folders = ["", "docs", "a", "a/b", "src/build", "other/docs", "日本/é"]

    @Test("byte-wise matching agrees with fnmatch on every name, with the defaults and extra patterns")
    func agreesWithFnmatch() {
        for patterns in [IgnoreRules.defaultPatterns, IgnoreRules.defaultPatterns + Self.extraPatterns, Self.extraPatterns] {
            let rules = IgnoreRules(patterns: patterns)
            for name in Self.names {
                for folder in Self.folders {
                    let relative = folder.isEmpty ? name : folder + "/" + name
                    for isDirectory in [false, true] {
                        let expected = Self.reference(patterns, name: name, relativePath: relative, isDirectory: isDirectory)
                        #expect(rules.isIgnored(name: name, relativePath: relative, isDirectory: isDirectory) == expected,
                                "\(relative) directory=\(isDirectory)")
                        var bytes = Array(name.utf8)
                        let byBytes = bytes.withUnsafeMutableBufferPointer { buffer in
                            rules.isIgnored(nameBytes: UnsafeBufferPointer(buffer), relativePath: { relative }, isDirectory: isDirectory)
                        }
                        #expect(byBytes == expected, "\(relative) directory=\(isDirectory) (bytes)")
                    }
                }
            }
        }
    }

    @Test("the editor and temporary names of the defaults are ignored, ordinary names are not")
    func defaults() {
        let rules = IgnoreRules.defaults
        for name in ["file~", ".file.swp", ".file.swx", "4913", ".#file", "#file#", "~$doc.docx", ".~lock.doc#", "x.tmp",
                     "x.part", ".DS_Store", ".ubiq-tmp-sync-1", ".ubiquity-cookie-1", ".ubiquity-sync.lock"] {
            #expect(rules.isIgnored(name: name, relativePath: "d/" + name, isDirectory: false), "\(name)")
        }
        for name in ["notes.txt", "file", ".file", "#file", "49130", "résumé.pdf", "日本語.txt"] {
            #expect(!rules.isIgnored(name: name, relativePath: "d/" + name, isDirectory: false), "\(name)")
        }
    }

    @Test("the relative path is only built when a pattern contains a slash")
    func relativePathOnlyWhenNeeded() {
        var built = 0
        let defaults = IgnoreRules.defaults
        #expect(!defaults.needsRelativePath)
        _ = defaults.isIgnored(name: "a.txt", relativePath: { built += 1; return "d/a.txt" }(), isDirectory: false)
        #expect(built == 0)
        let withPath = IgnoreRules(patterns: ["docs/*.tmp"])
        #expect(withPath.needsRelativePath)
        #expect(withPath.isIgnored(name: "x.tmp", relativePath: { built += 1; return "docs/x.tmp" }(), isDirectory: false))
        #expect(built == 1)
    }

    @Test("rules compare and hash by their patterns")
    func equality() {
        #expect(IgnoreRules(patterns: ["*.o"]) == IgnoreRules(patterns: ["*.o"]))
        #expect(IgnoreRules(patterns: ["*.o"]) != IgnoreRules(patterns: ["*.a"]))
        #expect(Set([IgnoreRules(patterns: ["*.o"]), IgnoreRules(patterns: ["*.o"])]).count == 1)
    }
}
