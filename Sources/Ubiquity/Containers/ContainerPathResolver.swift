// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// Resolves a path the way the kernel would walk it, for containment checks: components are
/// taken in order, every symbolic link met (in the middle, at the end, dangling or not) is
/// followed before a later `..` applies, and components that do not exist are kept as written.
///
/// A purely lexical normalisation would let `Documents/link/../x` (with `link` pointing outside)
/// or a dangling symbolic link escape a container; this does not.
package enum ContainerPathResolver {
    /// How many symbolic links may be followed before giving up (Linux's own limit).
    package static let maximumLinks = 40

    /// The resolved absolute form of `path`. Refuses relative paths (`invalidArgument`) and
    /// symbolic-link loops (`invalidArgument`).
    package static func resolve(_ path: String) throws -> String {
        guard path.hasPrefix("/") else {
            throw UbiquityError(.invalidArgument, "path '\(path)' is relative; an absolute path is required")
        }
        var resolved: [String] = []
        var pending = components(of: path).reversed() as [String]
        var links = 0
        while let component = pending.popLast() {
            if component == "." { continue }
            if component == ".." {
                if !resolved.isEmpty { resolved.removeLast() }
                continue
            }
            let candidate = "/" + (resolved + [component]).joined(separator: "/")
            guard let target = readLink(candidate) else {
                resolved.append(component)  // a directory, a file, or missing: keep as written
                continue
            }
            links += 1
            guard links <= maximumLinks else {
                throw UbiquityError(.invalidArgument, "path '\(path)' has too many levels of symbolic links")
            }
            if target.hasPrefix("/") { resolved.removeAll() }
            pending.append(contentsOf: components(of: target).reversed())
        }
        return "/" + resolved.joined(separator: "/")
    }

    private static func components(of path: String) -> [String] {
        path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
    }

    /// The target of the symbolic link at `path`, or nil when it is not a link (or is missing).
    private static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count >= 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
