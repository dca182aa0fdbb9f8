import Foundation
import Glibc

/// Which names the watcher, the index and (later) sync leave alone.
///
/// The defaults cover editor and temporary files (`*.swp`, `*~`, `.#*`, `#*#`, vim's `4913`
/// probe, our own `.ubiq-tmp-` prefix…); a container's `.ubiquityignore` file adds one glob
/// pattern per line (`#` starts a comment). A pattern without `/` matches a name at any depth;
/// a pattern with `/` matches the path relative to the root. A trailing `/` matches folders only.
///
/// The patterns are prepared once (``IgnorePattern``): the watcher, the scans and the sync engine
/// ask about every name they see, so a decision compares bytes and calls `fnmatch(3)` only for
/// patterns with `?`, `[` or `\` whose literal ends fit the name.
public struct IgnoreRules: Sendable, Hashable {
    /// The name of the per-root ignore file.
    public static let fileName = ".ubiquityignore"

    /// The default patterns (editor, temporary and system files).
    public static let defaultPatterns: [String] = [
        "*~", ".*.sw?", ".*.*sw?", "*.swp", "*.swx", "4913", ".#*", "#*#", "~$*", ".~lock.*",
        "*.tmp", "*.part", "*.crdownload", "*.kate-swp", ".DS_Store", "._*", ".fuse_hidden*",
        ".nfs*", "\(SafeSave.temporaryPrefix)*", ".ubiquity-cookie-*",
        // the sync engine's lock, in the drive folder and in every synced app container's
        // Documents: never indexed, so apps' metadata queries do not list it
        ".ubiquity-sync.lock",
    ]

    /// The rules with only the defaults.
    public static let defaults = IgnoreRules(patterns: defaultPatterns)

    /// The patterns, defaults first.
    public let patterns: [String]

    /// The patterns prepared for matching, in the same order.
    let prepared: [IgnorePattern]

    /// Whether any pattern matches the relative path (contains `/`), so that callers can skip
    /// building the relative path otherwise.
    public let needsRelativePath: Bool

    /// Rules from `patterns` as given (include ``defaultPatterns`` to keep the defaults).
    public init(patterns: [String]) {
        self.patterns = patterns
        prepared = patterns.map(IgnorePattern.init)
        needsRelativePath = prepared.contains { $0.matchesRelativePath }
    }

    public static func == (lhs: IgnoreRules, rhs: IgnoreRules) -> Bool {
        lhs.patterns == rhs.patterns
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(patterns)
    }

    /// The defaults plus the patterns in `root/.ubiquityignore`, if it exists.
    public static func load(root: String) -> IgnoreRules {
        let file = root.hasSuffix("/") ? root + fileName : root + "/" + fileName
        guard let data = try? String(contentsOfFile: file, encoding: .utf8) else { return .defaults }
        let extra = data.split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        return IgnoreRules(patterns: defaultPatterns + extra)
    }

    /// Whether the item named `name` at `relativePath` (relative to the root, `/`-separated)
    /// is ignored. An item inside an ignored folder is ignored too: callers stop descending.
    /// `relativePath` is only evaluated when a pattern contains `/`.
    public func isIgnored(name: String, relativePath: @autoclosure () -> String, isDirectory: Bool) -> Bool {
        var utf8 = name
        return utf8.withUTF8 { isIgnored(nameBytes: $0, relativePath: relativePath, isDirectory: isDirectory) }
    }

    /// Whether the item whose name is the bytes `name` (no terminating zero) is ignored, for
    /// callers that hold the name as bytes (a `readdir` entry). `relativePath` is only
    /// evaluated when a pattern contains `/`.
    public func isIgnored(nameBytes name: UnsafeBufferPointer<UInt8>, relativePath: () -> String,
                          isDirectory: Bool) -> Bool {
        var relative: String?
        // through a buffer pointer: the patterns are used in place, not copied (a copy of an
        // `IgnorePattern` retains and releases its five arrays: most of the cost of a decision)
        return prepared.withUnsafeBufferPointer { patterns in
            for index in patterns.indices {
                if patterns[index].directoryOnly && !isDirectory { continue }
                if patterns[index].matchesRelativePath {
                    if relative == nil { relative = relativePath() }
                    if relative!.withUTF8({ patterns[index].matches($0) }) { return true }
                } else if patterns[index].matches(name) {
                    return true
                }
            }
            return false
        }
    }
}
