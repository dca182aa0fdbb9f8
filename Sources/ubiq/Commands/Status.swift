// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity
import UbiquityCore
import UbiquityIndex
import UbiquityStore
import UbiquitySync

/// `ubiq status [PATH] [--json] [--watch]`: what Ubiquity knows about an item.
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show an item's kind, size, modification time, skip-backup state, conflicts and sync state.",
        discussion: """
            JSON keys: path, exists, kind (file, folder, symlink or null), size, modified, \
            excluded (true or false), conflicts (unresolved conflict versions) and sync (uploaded, \
            uploading, in conflict or excluded for an item of a folder `ubiq daemon` syncs; null \
            otherwise). A missing item is reported with "exists": false, not as an error.

            For an item of a synced folder also: downloadingStatus (current, downloaded — a newer \
            version is coming — or notDownloaded: evicted, only its stub .NAME.icloud is here), \
            isDownloading, percentDownloaded, downloadRequested, isUploading, percentUploaded \
            (0…100 while a transfer runs, else null), uploadError and downloadError (the last \
            failure's message until a transfer succeeds, else null), and pinned (true when it, or \
            a folder above it, is kept downloaded: ubiq pin).

            For a folder also what is below it, from the daemon's index (--index): how many items \
            are uploaded, not uploaded, uploading, downloading, not downloaded (evicted), in \
            conflict and excluded, and each item uploading or downloading (with a progress bar), \
            in conflict or excluded (the first 1,000). JSON: the key items, with indexed, total, \
            uploaded, notUploaded, uploading, downloading, notDownloaded, conflict, excluded, \
            active (objects with path — relative to the folder —, status and percent) and \
            activeTruncated.

            --watch prints the state again whenever it changes, until interrupted: JSON lines with \
            --json or when the output is not a terminal, else one line redrawn in place with a \
            progress bar (colored unless NO_COLOR is set).

            Examples:
              ubiq status notes.txt
              ubiq status notes.txt --json
              ubiq status ~/Ubiquity/videos/holiday.mp4 --watch
              ubiq status ~/Ubiquity                  # the folder: what is moving, what is in conflict
            """
    )

    @Argument(help: "The file or folder (relative paths are taken from the current folder; default: the current folder).")
    var path: String = "."

    @Flag(help: "Print JSON (sorted keys).")
    var json = false

    @Flag(help: "Print the state again whenever it changes, until interrupted.")
    var watch = false

    @Option(help: ArgumentHelp("Seconds between looks with --watch.", visibility: .hidden))
    var interval: Double = 0.25

    @Option(help: "The device database the states are read from: the daemon's index, which holds the sync journals (default $UBIQUITY_INDEX_DATABASE or $XDG_STATE_HOME/ubiquity/index.sqlite).")
    var index: String?

    func run() throws {
        try DocumentCommandIO.run("status") {
            let url = try DocumentCommandIO.absoluteURL(path)
            guard interval > 0, interval.isFinite else {
                throw UbiquityError(.invalidArgument, "--interval \(interval): expected a number of seconds > 0")
            }
            let database = try index.map(CLI.absolutePath) ?? Self.defaultIndexDatabase()
            if watch { return watchChanges(url, database: database) }
            var state = Self.state(of: url, database: database)
            let summary = Self.folderSummary(of: url, state: state, database: database)
            if let summary { state["items"] = summary.json }
            if json { return try DocumentCommandIO.printJSON(state) }
            Self.printText(state)
            if let summary {
                let color = isatty(STDOUT_FILENO) == 1 && (ProcessInfo.processInfo.environment["NO_COLOR"].map { $0.isEmpty } ?? true)
                for line in summary.lines(color: color) { print(line) }
            }
        }
    }

    /// The index file the daemon keeps (`$UBIQUITY_INDEX_DATABASE`, else the state folder's).
    static func defaultIndexDatabase() -> String {
        ProcessInfo.processInfo.environment["UBIQUITY_INDEX_DATABASE"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? UbiquityPaths().stateDirectory.appendingPathComponent("index.sqlite").path
    }

    /// The summary of what is below a folder (nil for anything else).
    static func folderSummary(of url: URL, state: [String: Any], database: String) -> FolderStatusSummary? {
        guard state["kind"] as? String == "folder" else { return nil }
        let folder = (try? CanonicalPath.canonicalize(url.path)) ?? url.path
        return FolderStatusSummary.read(folder: folder, database: database)
    }

    /// Prints the state whenever it changes (JSON lines, or a line redrawn on a terminal).
    func watchChanges(_ url: URL, database: String) {
        let lines = json || isatty(STDOUT_FILENO) != 1
        let color = ProcessInfo.processInfo.environment["NO_COLOR"].map { $0.isEmpty } ?? true
        var previous: NSDictionary?
        // a folder's items are counted at most once a second (a whole-index read each time)
        let summaryInterval = max(interval, 1)
        var summary: FolderStatusSummary?
        var summarized = Date.distantPast
        while true {
            var state = Self.state(of: url, database: database)
            if Date().timeIntervalSince(summarized) >= summaryInterval {
                summary = Self.folderSummary(of: url, state: state, database: database)
                summarized = Date()
            }
            if let summary { state["items"] = summary.json }
            let current = state as NSDictionary
            if current != previous {
                previous = current
                if lines {
                    if let data = try? JSONSerialization.data(withJSONObject: state, options: [.sortedKeys, .withoutEscapingSlashes]) {
                        CLI.printLine(String(decoding: data, as: UTF8.self))
                    }
                } else if let summary {
                    CLI.printRaw("\r\u{1B}[K" + summary.line(folder: url.path))
                } else {
                    CLI.printRaw("\r\u{1B}[K" + StatusLine.line(state, color: color))
                }
            }
            usleep(useconds_t(interval * 1_000_000))
        }
    }

    /// The item's state as the JSON object `--json` prints (its sync state from the device
    /// database at `database`).
    static func state(of url: URL, database: String = defaultIndexDatabase()) -> [String: Any] {
        // an evicted file: its stub stands for it (the stub's times, the document's size)
        let own = FileStamp.of(url.path) ?? Placeholder.standingFor(url.path).flatMap { stub in
            FileStamp.of(Placeholder.stubPath(for: url.path)).map { var stamp = $0; stamp.size = stub.size; return stamp }
        }
        // A symbolic link is reported as one, with its target; size, date and the skip-backup
        // state are the target's (exclude and include act on the target too).
        let target = own?.isSymbolicLink == true ? try? CanonicalPath.canonicalize(url.path, resolveLast: true) : nil
        let stamp = target.flatMap(FileStamp.of) ?? own
        let kind = own.map { $0.isSymbolicLink ? "symlink" : $0.isDirectory ? "folder" : "file" }
        var excluded = false
        if stamp != nil {
            excluded = (try? url.ubiquityIsExcludedFromBackup) ?? false  // no user attributes there: nothing can be excluded
        }
        let conflicts = FileVersion.unresolvedConflictVersionsOfItem(at: url)?.count ?? 0
        let sync = stamp == nil ? nil : SyncJournal.itemState(ofItemAt: url.path, conflicts: conflicts, database: database)
        var state: [String: Any] = [
            "path": url.path,
            "exists": stamp != nil,
            "kind": kind ?? NSNull(),
            "target": target ?? NSNull(),
            "size": stamp.map { $0.size as Any } ?? NSNull(),
            "modified": DocumentCommandIO.timestamp(stamp?.modificationDate) ?? NSNull(),
            "excluded": excluded,
            "conflicts": conflicts,
            "sync": sync?.sync.rawValue ?? NSNull(),
        ]
        if let sync {
            state["downloadingStatus"] = StatusLine.name(sync.downloadingStatus)
            state["isDownloading"] = sync.isDownloading
            state["percentDownloaded"] = sync.percentDownloaded.map { $0.rounded() } ?? NSNull()
            state["downloadRequested"] = sync.downloadRequested
            state["isUploading"] = sync.isUploading
            state["percentUploaded"] = sync.percentUploaded.map { $0.rounded() } ?? NSNull()
            state["uploadError"] = sync.uploadError ?? NSNull()
            state["downloadError"] = sync.downloadError ?? NSNull()
            state["pinned"] = sync.isPinned ?? false
        }
        return state
    }

    static func printText(_ state: [String: Any]) {
        print("path:      \(state["path"] as? String ?? "")")
        guard state["exists"] as? Bool == true else { return print("exists:    no") }
        print("exists:    yes")
        print("kind:      \(state["kind"] as? String ?? "-")\((state["target"] as? String).map { " → " + $0 } ?? "")")
        print("size:      \(state["size"] as? Int64 ?? 0) bytes")
        print("modified:  \(state["modified"] as? String ?? "-")")
        print("excluded:  \(state["excluded"] as? Bool == true ? "yes" : "no")")
        print("conflicts: \(state["conflicts"] as? Int ?? 0)")
        guard let sync = state["sync"] as? String else { return }
        print("sync:      \(sync)\((state["percentUploaded"] as? Double).map { " (\(Int($0))%)" } ?? "")")
        let downloading = state["downloadingStatus"] as? String ?? "current"
        print("download:  \(downloading == "notDownloaded" ? "not downloaded (evicted)" : downloading)"
              + ((state["percentDownloaded"] as? Double).map { ", downloading \(Int($0))%" } ?? "")
              + (state["pinned"] as? Bool == true ? ", pinned (kept downloaded)" : ""))
        if let error = state["uploadError"] as? String { print("upload error:   \(error)") }
        if let error = state["downloadError"] as? String { print("download error: \(error)") }
    }
}

/// The one-line, redrawn form of a state (`ubiq status --watch`, `ubiq download` on a terminal).
enum StatusLine {
    /// The short name of a downloading status (JSON and text).
    static func name(_ status: UbiquitousDownloadingStatus) -> String {
        switch status {
        case .current: "current"
        case .downloaded: "downloaded"
        case .notDownloaded: "notDownloaded"
        }
    }

    /// `name  [#####     ]  42%`.
    static func progress(_ name: String, percent: Double, color: Bool = false) -> String {
        let width = 20
        let filled = max(0, min(width, Int(percent / 100 * Double(width))))
        let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
        let shown = color ? "\u{1B}[36m" + bar + "\u{1B}[0m" : bar
        return "\(name)  [\(shown)] \(Int(percent))%"
    }

    /// The compact line of `state`.
    static func line(_ state: [String: Any], color: Bool) -> String {
        let name = ((state["path"] as? String ?? "") as NSString).lastPathComponent
        guard state["exists"] as? Bool == true else { return "\(name)  missing" }
        if let percent = state["percentDownloaded"] as? Double { return "↓ " + progress(name, percent: percent, color: color) }
        if let percent = state["percentUploaded"] as? Double { return "↑ " + progress(name, percent: percent, color: color) }
        var parts = [name, state["sync"] as? String ?? "not synced"]
        if state["downloadingStatus"] as? String == "notDownloaded" { parts.append("not downloaded") }
        if let error = (state["uploadError"] as? String) ?? (state["downloadError"] as? String) {
            parts.append(color ? "\u{1B}[31merror: \(error)\u{1B}[0m" : "error: \(error)")
        }
        return parts.joined(separator: "  ")
    }
}
