import Foundation
import Glibc

/// Which names the watcher, the index and (later) sync leave alone.
///
/// The defaults cover editor and temporary files (`*.swp`, `*~`, `.#*`, `#*#`, vim's `4913`
/// probe, our own `.ubiq-tmp-` prefix…); a container's `.ubiquityignore` file adds one glob
/// pattern per line (`#` starts a comment). A pattern without `/` matches a name at any depth;
/// a pattern with `/` matches the path relative to the root. A trailing `/` matches folders only.
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

    /// Rules from `patterns` as given (include ``defaultPatterns`` to keep the defaults).
    public init(patterns: [String]) {
        self.patterns = patterns
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
    public func isIgnored(name: String, relativePath: String, isDirectory: Bool) -> Bool {
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
}
