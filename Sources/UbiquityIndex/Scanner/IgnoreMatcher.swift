import Glibc
import UbiquityCore

/// ``IgnoreRules`` prepared once per scan: the same decisions as
/// ``IgnoreRules/isIgnored(name:relativePath:isDirectory:)``, with each pattern converted to a C
/// string up front and names matched straight from `readdir`'s buffer (the scanner calls this
/// for every entry, so per-call string work would dominate a scan).
struct IgnoreMatcher {
    private struct Pattern {
        var bytes: [CChar]
        var directoryOnly: Bool
        var matchesRelativePath: Bool
    }

    private let patterns: [Pattern]
    /// Whether any pattern needs the relative path (so callers can skip building it otherwise).
    let needsRelativePath: Bool

    init(_ rules: IgnoreRules) {
        var patterns: [Pattern] = []
        for var pattern in rules.patterns {
            var directoryOnly = false
            if pattern.hasSuffix("/") {
                directoryOnly = true
                pattern.removeLast()
            }
            let matchesRelativePath = pattern.utf8.contains(UInt8(ascii: "/"))
            if pattern.hasPrefix("/") { pattern.removeFirst() }
            patterns.append(Pattern(bytes: Array(pattern.utf8CString), directoryOnly: directoryOnly,
                                    matchesRelativePath: matchesRelativePath))
        }
        self.patterns = patterns
        needsRelativePath = patterns.contains { $0.matchesRelativePath }
    }

    /// Whether the entry named `name` (a C string) at `relativePath` is ignored.
    func isIgnored(name: UnsafePointer<CChar>, relativePath: @autoclosure () -> String, isDirectory: Bool) -> Bool {
        var relative: [CChar]?
        for pattern in patterns {
            if pattern.directoryOnly && !isDirectory { continue }
            let matched: Bool
            if pattern.matchesRelativePath {
                if relative == nil { relative = Array(relativePath().utf8CString) }
                matched = fnmatch(pattern.bytes, relative!, 0) == 0
            } else {
                matched = fnmatch(pattern.bytes, name, 0) == 0
            }
            if matched { return true }
        }
        return false
    }
}
