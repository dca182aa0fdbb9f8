// SPDX-License-Identifier: Apache-2.0

/// Canonicalizes many paths (``CanonicalPath/canonicalize(_:resolveLast:)``), walking each
/// distinct folder once: a coordinated claim of 200 files in one folder resolves the folder's
/// components once, not 200 times, and appends each name. Keep one for one batch only (a link
/// changed later is not seen).
public struct CanonicalPathCache: Sendable {
    private var folders: [String: String] = [:]

    /// An empty cache.
    public init() {}

    /// The same answer as ``CanonicalPath/canonicalize(_:resolveLast:)``.
    public mutating func canonicalize(_ path: String, resolveLast: Bool = false) throws -> String {
        // the plain case: an absolute path whose last component is a name (not `.`, `..`, not
        // followed by `/`), not itself resolved; anything else is walked whole
        guard !resolveLast, path.utf8.first == UInt8(ascii: "/"), path.utf8.last != UInt8(ascii: "/"),
              let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else {
            return try CanonicalPath.canonicalize(path, resolveLast: resolveLast)
        }
        let name = String(path.utf8[path.utf8.index(after: slash)...])!
        guard name != ".", name != ".." else { return try CanonicalPath.canonicalize(path, resolveLast: resolveLast) }
        let folder = String(path.utf8[..<slash])!
        let canonicalFolder: String
        if let known = folders[folder] {
            canonicalFolder = known
        } else {
            // the walk of `path` follows every component before the last: the folder resolved
            // with its last component followed, then the name appended unresolved
            canonicalFolder = try CanonicalPath.resolve(folder.isEmpty ? "/" : folder, followLast: true)
            folders[folder] = canonicalFolder
        }
        return canonicalFolder == "/" ? "/" + name : canonicalFolder + "/" + name
    }
}
