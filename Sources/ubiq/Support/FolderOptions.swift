// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity

/// `--folder` and `--verbose` of the folder commands (`ls`, `cat`, `put`, `get`, `mv`, `rm`,
/// `mkdir`), and how their PATH arguments are read.
struct FolderOptions: ParsableArguments {
    @Option(help: "The synced folder (overrides $UBIQUITY_FOLDER; default ~/Ubiquity).")
    var folder: String?

    @Flag(name: .shortAndLong, help: "Say on stderr how the command works (e.g. without a daemon).")
    var verbose = false

    /// The folder's canonical absolute path: --folder, else $UBIQUITY_FOLDER, else ~/Ubiquity. It
    /// must exist and be a folder.
    func root(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String {
        try Self.root(folder: folder, environment: environment)
    }

    /// The synced folder's canonical absolute path for a `--folder` option's value (see
    /// ``root(environment:)``).
    static func root(folder: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String {
        let given = folder ?? environment["UBIQUITY_FOLDER"].flatMap { $0.isEmpty ? nil : $0 }
        let path = try given.map(CLI.absolutePath) ?? CanonicalPath.canonicalize(UbiquityPaths(environment: environment).home.appendingPathComponent("Ubiquity").path)
        let source = folder != nil ? "--folder" : given != nil ? "$UBIQUITY_FOLDER" : "the default folder"
        guard let stamp = FileStamp.of(path) else {
            throw UbiquityError(.notFound, "\(source) '\(path)' does not exist: create it (mkdir -p '\(path)'), start `ubiq daemon`, or pass --folder")
        }
        guard stamp.isDirectory else { throw UbiquityError(.invalidArgument, "\(source) '\(path)' is not a folder") }
        return path
    }

    /// The absolute path of the folder-relative ARGUMENT `argument`: an absolute path as it is, a
    /// relative one from the current directory when that is inside the folder, else from the
    /// folder's root. A path outside the folder is a usage error naming `name` (e.g. PATH).
    func resolve(_ argument: String, name: String, root: String) throws -> String {
        guard !argument.isEmpty else { throw ValidationError("\(name) must not be empty") }
        let cwd = FileManager.default.currentDirectoryPath
        let base: String
        if argument.hasPrefix("/") {
            base = ""
        } else if let current = try? CanonicalPath.canonicalize(cwd), CanonicalPath.isSameOrDescendant(current, of: root) {
            base = current + "/"
        } else {
            base = root + "/"
        }
        let path = try CanonicalPath.canonicalize(base + argument)
        guard CanonicalPath.isSameOrDescendant(path, of: root) || Self.isThroughAppFolder(CanonicalPath.normalize(base + argument), path, root: root) else {
            throw ValidationError("\(name) '\(argument)' is outside the folder '\(root)' (\(path)); give a path inside it, or another --folder")
        }
        return path
    }

    /// Whether `resolved` is in an app container's documents reached through the app's folder
    /// (a link) in the folder: `lexical` (the path as written) is under `root`, `resolved` (links
    /// followed) under the containers folder.
    static func isThroughAppFolder(_ lexical: String, _ resolved: String, root: String) -> Bool {
        guard lexical != root, CanonicalPath.isSameOrDescendant(lexical, of: root) else { return false }
        let containers = UbiquityPaths().containersDirectory.path
        let canonical = (try? CanonicalPath.canonicalize(containers, resolveLast: true)) ?? containers
        return CanonicalPath.isSameOrDescendant(resolved, of: canonical) && resolved != canonical
    }

    /// A local (not folder-relative) path argument: relative to the current directory.
    func local(_ argument: String, name: String) throws -> String {
        guard !argument.isEmpty else { throw ValidationError("\(name) must not be empty") }
        return try CLI.absolutePath(argument)
    }

    /// Writes `message` on stderr when --verbose.
    func note(_ command: String, _ message: @autoclosure () -> String) {
        guard verbose else { return }
        FileHandle.standardError.write(Data("ubiq \(command): \(message())\n".utf8))
    }

    /// With --verbose, says whether coordination went through the daemon (call it after the first
    /// coordinated access: the daemon is found when a claim is made).
    func noteCoordination(_ command: String) {
        guard verbose else { return }
        if FileCoordinator.isUsingCoordinationService {
            note(command, "coordinated through the daemon: presenters in other processes saved first and heard of the change")
        } else {
            note(command, "no daemon answered: coordinated within this process only (start `ubiq daemon` to reach presenters in other processes)")
        }
    }
}
