import Glibc
import UbiquityCore

/// Path helpers shared by the hub, the coalescer and the tree walk: joining, relative paths and
/// the ignore decision (which always hides the watcher's own sync cookies).
enum WatchPaths {
    /// The name prefix of the files ``FileWatcher/sync(root:timeout:)`` drops into a root.
    static let cookiePrefix = ".ubiquity-cookie-"

    /// `directory/name`, without doubling the separator for `/`.
    static func join(_ directory: String, _ name: String) -> String {
        directory == "/" ? "/" + name : directory + "/" + name
    }

    /// Whether `path` is `root` or lies below it.
    static func isWithin(_ path: String, root: String) -> Bool {
        if path == root { return true }
        if root == "/" { return path.hasPrefix("/") }
        return path.hasPrefix(root) && path.utf8.count > root.utf8.count
            && path.utf8[path.utf8.index(path.utf8.startIndex, offsetBy: root.utf8.count)] == UInt8(ascii: "/")
    }

    /// Whether `path` lies strictly below `ancestor`.
    static func isDescendant(_ path: String, of ancestor: String) -> Bool {
        path != ancestor && isWithin(path, root: ancestor)
    }

    /// `path` relative to `root` (`""` for the root itself).
    static func relative(_ path: String, root: String) -> String {
        if path == root { return "" }
        let dropped = root == "/" ? 1 : root.utf8.count + 1
        return String(path.utf8.dropFirst(dropped))!
    }

    /// The last component of `path`.
    static func name(_ path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return path }
        return String(path.utf8[path.utf8.index(after: slash)...])!
    }

    /// `path` with its `prefix` (a folder path, `path` being within it) replaced by `replacement`.
    static func rebase(_ path: String, from prefix: String, to replacement: String) -> String {
        if path == prefix { return replacement }
        return replacement + String(path.utf8.dropFirst(prefix.utf8.count))!
    }

    /// Whether the item at `path` (below `root`) is hidden by `rules` or is a sync cookie.
    /// (On the bytes of `path`: the watcher asks this for every event, the name is not copied.)
    static func isIgnored(_ path: String, root: String, rules: IgnoreRules, isDirectory: Bool) -> Bool {
        if path == root { return false }
        var utf8 = path
        return utf8.withUTF8 { bytes in
            let start = (bytes.lastIndex(of: UInt8(ascii: "/")) ?? -1) + 1
            let name = UnsafeBufferPointer(rebasing: bytes[start...])
            if name.starts(with: cookiePrefix.utf8) { return true }
            return rules.isIgnored(nameBytes: name, relativePath: { relative(path, root: root) },
                                   isDirectory: isDirectory)
        }
    }

    /// Whether something exists at `path` (without following a final symbolic link).
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// Monotonic time in nanoseconds.
    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}

extension Duration {
    /// The duration in whole nanoseconds (negative durations count as zero).
    var watchNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        return UInt64(seconds) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }
}
