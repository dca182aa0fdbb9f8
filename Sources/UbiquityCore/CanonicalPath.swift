// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// Path helpers for coordination: every item is keyed by an absolute, normalised path whose
/// existing parent directories have their symbolic links resolved.
public enum CanonicalPath {
    /// The canonical form of `path`: absolute (relative paths are refused), walked the way the
    /// kernel walks it — every symbolic link met is followed before a later `..` applies, so
    /// `link/../x` means what the shell means — with the last component's link left alone unless
    /// `resolveLast` (the `resolvesSymbolicLink` reading option). Components that do not exist
    /// are kept as written. A trailing `/` after something that is not a folder is refused.
    public static func canonicalize(_ path: String, resolveLast: Bool = false) throws -> String {
        guard path.hasPrefix("/") else {
            throw UbiquityError(.invalidArgument, "path '\(path)' is relative; an absolute path is required")
        }
        let resolved = try resolve(path, followLast: resolveLast)
        if path.count > 1, path.hasSuffix("/"), let stamp = FileStamp.of(resolved), !stamp.isDirectory, !stamp.isSymbolicLink {
            throw UbiquityError(.invalidArgument, "'\(path)' ends with '/' but '\(resolved)' is not a folder")
        }
        return resolved
    }

    /// How many symbolic links a walk may follow (Linux's own limit).
    public static let maximumLinks = 40

    /// Walks `path` component by component as the kernel does (see ``canonicalize(_:resolveLast:)``);
    /// `followLast` also follows a symbolic link in the last component.
    public static func resolve(_ path: String, followLast: Bool) throws -> String {
        guard path.hasPrefix("/") else {
            throw UbiquityError(.invalidArgument, "path '\(path)' is relative; an absolute path is required")
        }
        var resolved: [Substring] = []
        var pending = Array(path.split(separator: "/", omittingEmptySubsequences: true).reversed())
        var links = 0
        while let component = pending.popLast() {
            if component == "." { continue }
            if component == ".." {
                if !resolved.isEmpty { resolved.removeLast() }
                continue
            }
            // The last component of the walk is followed only when asked (or when more follows).
            let isLast = pending.allSatisfy { $0 == "." }
            let candidate = "/" + (resolved + [component]).joined(separator: "/")
            guard !isLast || followLast, let target = readLink(candidate) else {
                resolved.append(component)
                continue
            }
            links += 1
            guard links <= maximumLinks else {
                throw UbiquityError(.invalidArgument, "path '\(path)' has too many levels of symbolic links")
            }
            if target.hasPrefix("/") { resolved.removeAll() }
            pending.append(contentsOf: target.split(separator: "/", omittingEmptySubsequences: true).reversed())
        }
        return "/" + resolved.joined(separator: "/")
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

    /// The target of the symbolic link at `path`, or nil when it is not one (or is missing).
    private static func readLink(_ path: String) -> Substring? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count >= 0 else { return nil }
        return Substring(String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
}
