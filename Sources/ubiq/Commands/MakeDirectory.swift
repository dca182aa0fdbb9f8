// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Glibc
import Ubiquity

/// `ubiq mkdir [-p] PATH…`: coordinated folder creation in the folder.
struct MakeDirectory: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mkdir",
        abstract: "Create folders in the folder under coordinated writes.",
        discussion: """
            Each PATH is created under `coordinate(writingItemAt:)`, so presenters of its parent \
            folder (in any process, through the daemon) hear of the new item. -p creates missing \
            parents and accepts an existing folder. Without a daemon the write is coordinated \
            within this process only (--verbose says so).

            JSON (--json): one object per PATH: path, created (false when -p found it there).

            Exit codes: 0 created; 1 failed (already exists without -p, parent missing without \
            -p); 64 bad usage (a path outside the folder); 75 the coordination timed out.

            Examples:
              ubiq mkdir photos
              ubiq mkdir -p projects/2026/q4 --json
            """
    )

    @Argument(help: "The folders to create (inside the folder).")
    var paths: [String]

    @Flag(name: [.customShort("p"), .customLong("parents")], help: "Create missing parents; an existing folder is fine.")
    var parents = false

    @Flag(help: "Print one JSON object per PATH.")
    var json = false

    @OptionGroup var folder: FolderOptions

    func run() throws {
        try CLI.run("mkdir") {
            let root = try folder.root()
            let items = try paths.map { try folder.resolve($0, name: "PATH", root: root) }
            let coordinator = FileCoordinator()
            for (argument, path) in zip(paths, items) {
                if let stamp = FileStamp.of(path) {
                    guard parents, stamp.isDirectory else {
                        throw UbiquityError(.alreadyExists, "PATH '\(argument)' already exists (\(path))\(stamp.isDirectory ? "; -p accepts an existing folder" : "")")
                    }
                    if json { CLI.printLine(CLI.jsonObject([("path", path), ("created", false)])) }
                    continue
                }
                let parent = CanonicalPath.parentPath(of: path)
                if !parents, FileStamp.of(parent)?.isDirectory != true {
                    throw UbiquityError(.notFound, "the parent of PATH '\(argument)' ('\(parent)') does not exist; use mkdir -p")
                }
                // The top-most missing ancestor is what appears: coordinate on it (its subtree).
                var top = path
                while CanonicalPath.parentPath(of: top) != root, FileStamp.of(CanonicalPath.parentPath(of: top)) == nil {
                    top = CanonicalPath.parentPath(of: top)
                }
                try coordinator.coordinate(writingItemAt: URL(fileURLWithPath: top), options: []) { _ in
                    do {
                        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: parents)
                    } catch {
                        throw UbiquityError(.io, "cannot create the folder '\(path)'", underlying: error)
                    }
                }
                if json { CLI.printLine(CLI.jsonObject([("path", path), ("created", true)])) }
            }
            folder.noteCoordination("mkdir")
        }
    }
}
