// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity

/// `ubiq resolve PATH --keep current|VERSION-ID [--json]`: settles a file's conflicts.
struct Resolve: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resolve",
        abstract: "Settle a file's conflicts by keeping the current content or one version.",
        discussion: """
            Everything happens inside one coordinated write of PATH. With a version id, the \
            current content is first saved as an ordinary version, then replaced by the kept \
            version's content, so nothing is lost. Then every conflict version is marked \
            resolved and removed. `ubiq versions PATH` lists the ids.

            Examples:
              ubiq resolve notes.txt --keep current
              ubiq resolve notes.txt --keep 5F1C…   (an id from ubiq versions)
            """
    )

    @Argument(help: "The file (relative paths are taken from the current folder).")
    var path: String

    @Option(help: ArgumentHelp("What to keep: 'current' or a version id.", valueName: "current|VERSION-ID"))
    var keep: String

    @Flag(help: "Print what was done as JSON (sorted keys).")
    var json = false

    func validate() throws {
        if keep.trimmingCharacters(in: .whitespaces).isEmpty {
            throw ValidationError("--keep needs 'current' or a version id (see `ubiq versions \(path)`)")
        }
    }

    /// What a resolution did.
    struct Outcome {
        var savedVersion: String?
        var resolved: [String] = []
        var removed: [String] = []
    }

    func run() throws {
        try DocumentCommandIO.run("resolve") {
            let url = try DocumentCommandIO.fileURL(path)
            let keep = self.keep
            let outcome = try FileCoordinator().coordinate(writingItemAt: url, options: []) { url in
                try Self.resolve(url, keeping: keep)
            }
            if json {
                try DocumentCommandIO.printJSON([
                    "path": url.path,
                    "kept": keep,
                    "savedVersion": outcome.savedVersion.map { $0 as Any } ?? NSNull(),
                    "resolved": outcome.resolved,
                    "removed": outcome.removed,
                ])
                return
            }
            if let saved = outcome.savedVersion { print("kept version \(keep); the previous content is saved as version \(saved)") }
            else { print("kept the current content") }
            print("resolved \(outcome.resolved.count) conflict\(outcome.resolved.count == 1 ? "" : "s"), removed \(outcome.removed.count) conflict version\(outcome.removed.count == 1 ? "" : "s")")
        }
    }

    /// Resolves inside the coordinated write: save current, replace, mark resolved, remove.
    static func resolve(_ url: URL, keeping keep: String) throws -> Outcome {
        guard FileVersion.currentVersionOfItem(at: url) != nil else {
            throw UbiquityError(.notFound, "no item at '\(url.path)'")
        }
        var outcome = Outcome()
        if keep != "current" {
            guard let kept = FileVersion.otherVersionsOfItem(at: url)?.first(where: { $0.persistentIdentifier == keep }) else {
                throw UbiquityError(.notFound, "'\(url.path)' has no version '\(keep)'; `ubiq versions \(url.path)` lists them")
            }
            outcome.savedVersion = try FileVersion.addOfItem(at: url, withContentsOf: url).persistentIdentifier
            try kept.replaceItem(at: url)
        }
        let conflicts = (FileVersion.otherVersionsOfItem(at: url) ?? []).filter(\.isConflict)
        for conflict in conflicts where !conflict.isResolved {
            try conflict.markResolved()
            outcome.resolved.append(conflict.persistentIdentifier)
        }
        for conflict in conflicts {
            try conflict.remove()
            outcome.removed.append(conflict.persistentIdentifier)
        }
        return outcome
    }
}
