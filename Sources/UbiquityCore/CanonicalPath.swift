// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// Path helpers for coordination: every item is keyed by an absolute, normalised path whose
/// existing parent directories have their symbolic links resolved.
public enum CanonicalPath {
    /// The canonical form of `path`: absolute (relative paths are refused), `.` and `..` removed,
    /// symbolic links in the existing ancestors resolved. The last component is resolved too when
    /// `resolveLast` is set (the `resolvesSymbolicLink` reading option).
    public static func canonicalize(_ path: String, resolveLast: Bool = false) throws -> String {
        guard path.hasPrefix("/") else {
            throw UbiquityError(.invalidArgument, "path '\(path)' is relative; an absolute path is required")
        }
        let normal = normalize(path)
        if normal == "/" { return normal }
        if resolveLast, let real = realpath(normal) { return real }
        let parent = parentPath(of: normal)
        let name = String(normal[normal.index(after: normal.lastIndex(of: "/")!)...])
        // Resolve the nearest existing ancestor and re-append what does not exist yet.
        var existing = parent
        var missing: [String] = []
        while existing != "/", realpath(existing) == nil {
            missing.insert(lastComponent(of: existing), at: 0)
            existing = parentPath(of: existing)
        }
        var base = realpath(existing) ?? existing
        for component in missing + [name] {
            base = base == "/" ? "/" + component : base + "/" + component
        }
        return base
    }

    /// `path` with `.`, `..`, repeated and trailing slashes removed (purely lexical).
    public static func normalize(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            if part == "." { continue }
            if part == ".." { if !parts.isEmpty { parts.removeLast() }; continue }
            parts.append(part)
        }
        return "/" + parts.joined(separator: "/")
    }

    /// The parent of a normalised absolute path (`/` for `/`).
    public static func parentPath(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), path != "/" else { return "/" }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The last component of a normalised absolute path.
    public static func lastComponent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// The strict ancestors of a normalised path, nearest first, ending with `/`.
    public static func ancestors(of path: String) -> [String] {
        var result: [String] = []
        var current = path
        while current != "/" {
            current = parentPath(of: current)
            result.append(current)
        }
        return result
    }

    /// Whether `path` is `ancestor` or inside it.
    public static func isSameOrDescendant(_ path: String, of ancestor: String) -> Bool {
        if path == ancestor || ancestor == "/" { return true }
        return path.hasPrefix(ancestor) && path.utf8.count > ancestor.utf8.count
            && path.utf8[path.utf8.index(path.utf8.startIndex, offsetBy: ancestor.utf8.count)] == UInt8(ascii: "/")
    }

    /// `path` moved from under `old` to under `new` (for descendants of a moved folder).
    public static func rebase(_ path: String, from old: String, to new: String) -> String {
        if path == old { return new }
        return new + path.dropFirst(old.count)
    }

    private static func realpath(_ path: String) -> String? {
        guard let resolved = Glibc.realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
