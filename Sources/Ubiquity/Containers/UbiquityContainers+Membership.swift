// SPDX-License-Identifier: Apache-2.0
import Foundation

extension UbiquityContainers {
    /// The declared container holding `url` and the path inside it (`""` for the container
    /// itself, `Documents/a.txt` for a document). The path is resolved first, following symbolic
    /// links and `..` as the kernel would, so neither can escape a container.
    ///
    /// Throws `invalidArgument` for a relative path or a URL that is not a file URL,
    /// `unknownContainer` for a path in a container directory that is not declared, and
    /// `outsideContainer` for any other path.
    public func container(containing url: URL) throws -> (identifier: ContainerIdentifier, relativePath: String) {
        let path = try Self.absolutePath(of: url)
        let resolved = try CanonicalPath.resolve(path, followLast: true)
        for identifier in identifiers {
            let root = try CanonicalPath.resolve(location(of: identifier).path, followLast: true)
            if let relative = Self.relativePath(of: resolved, under: root) { return (identifier, relative) }
        }
        let containers = try CanonicalPath.resolve(paths.containersDirectory.path, followLast: true)
        if let relative = Self.relativePath(of: resolved, under: containers),
           let folder = relative.split(separator: "/").first,
           let identifier = try? ContainerIdentifier(folder.replacingOccurrences(of: "~", with: ".")) {
            throw UbiquityError(.unknownContainer, "'\(path)' is in container '\(identifier)', which is not declared by this "
                                + "process (\(declaredSummary)); " + Self.howToDeclare)
        }
        throw UbiquityError(.outsideContainer, "'\(path)'\(Self.resolutionNote(path, resolved)) is not inside any declared "
                            + "ubiquity container (\(declaredSummary)); containers live in '\(paths.containersDirectory.path)'")
    }

    /// Checks that `url` lies inside the container `identifier` names (`nil`: the default) once
    /// resolved (symbolic links and `..` cannot escape), and returns the resolved URL.
    ///
    /// Throws `invalidArgument` for a relative path, a non-file URL or a malformed identifier,
    /// `unknownContainer` for an undeclared container, and `outsideContainer` otherwise.
    @discardableResult
    public func validate(_ url: URL, in identifier: String? = nil) throws -> URL {
        let container = try self.identifier(for: identifier)
        let path = try Self.absolutePath(of: url)
        let resolved = try CanonicalPath.resolve(path, followLast: true)
        let root = try CanonicalPath.resolve(location(of: container).path, followLast: true)
        guard Self.relativePath(of: resolved, under: root) != nil else {
            throw UbiquityError(.outsideContainer, "'\(path)'\(Self.resolutionNote(path, resolved)) is outside container "
                                + "'\(container)' ('\(root)')")
        }
        return URL(fileURLWithPath: resolved)
    }

    /// The absolute path of a file URL; refuses other schemes and relative paths.
    static func absolutePath(of url: URL) throws -> String {
        if let scheme = url.scheme, scheme.lowercased() != "file" {
            throw UbiquityError(.invalidArgument, "'\(url.absoluteString)' is not a file URL")
        }
        let path = url.path
        guard path.hasPrefix("/") else {
            throw UbiquityError(.invalidArgument, "path '\(path)' is relative; an absolute path is required")
        }
        return path
    }

    /// `path` relative to `root` (`""` when equal), or nil when it is not `root` or inside it.
    static func relativePath(of path: String, under root: String) -> String? {
        guard CanonicalPath.isSameOrDescendant(path, of: root) else { return nil }
        if path == root { return "" }
        return String(decoding: path.utf8.dropFirst(root == "/" ? 1 : root.utf8.count + 1), as: UTF8.self)
    }

    private static func resolutionNote(_ path: String, _ resolved: String) -> String {
        path == resolved ? "" : " (resolved to '\(resolved)')"
    }

    private var declaredSummary: String {
        identifiers.isEmpty ? "none is declared" : "declared: " + identifiers.map(\.rawValue).joined(separator: ", ")
    }
}
