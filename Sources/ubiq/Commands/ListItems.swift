// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Glibc
import Ubiquity
import UbiquityStore

/// `ubiq ls [PATH] [-R] [-l] [--json]`: the folder's items with their sync status.
struct ListItems: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls",
        abstract: "List items of the folder with their sync status (and with -l their size and date).",
        discussion: """
            PATH (default: the current directory when it is inside the folder, else the folder's \
            root) is a folder or a file inside the folder; relative paths are taken the same way. \
            Names are sorted byte-wise; folders end with '/'; names starting with '.' are shown \
            with -a only. -R lists every item below PATH (paths relative to PATH, each folder \
            before its contents).

            The status column comes from the daemon's index (--index, default \
            $UBIQUITY_INDEX_DATABASE or $XDG_STATE_HOME/ubiquity/index.sqlite), read directly \
            and read-only in one query: uploaded, uploading N%, downloading N%, not downloaded, \
            conflict, excluded, not uploaded (indexed, never sent), or unknown (not in the index, \
            or no index: the daemon is not running or has not indexed it yet). Colour only on a \
            terminal and without NO_COLOR.

            JSON (--json): one object per line: path (absolute), name (as listed), kind (file, \
            folder, symlink or other), size, modified (ISO 8601 UTC), status, percent (null unless \
            uploading or downloading).

            Exit codes: 0 listed; 1 PATH does not exist or cannot be read; 64 bad usage (PATH \
            outside the folder).

            Examples:
              ubiq ls
              ubiq ls -l docs
              ubiq ls -R --json | jq -r 'select(.status == "conflict") | .path'
            """
    )

    @Argument(help: "A folder or file inside the folder.")
    var path: String?

    @Flag(name: .customShort("R"), help: "List every item below PATH.")
    var recursive = false

    @Flag(name: .customShort("l"), help: "Long format: status, size, modification time, name.")
    var long = false

    @Flag(name: [.customShort("a"), .customLong("all")], help: "Also list names starting with '.'.")
    var all = false

    @Flag(help: "Print one JSON object per item.")
    var json = false

    @Option(help: "The index file to read the status from (default $UBIQUITY_INDEX_DATABASE or $XDG_STATE_HOME/ubiquity/index.sqlite).")
    var index: String?

    @OptionGroup var folder: FolderOptions

    /// One listed item.
    struct Entry {
        var name: String
        var path: String
        var kind: UInt8
    }

    func run() throws {
        try CLI.run("ls") {
            let root = try folder.root()
            let target: String
            if let path {
                target = try folder.resolve(path, name: "PATH", root: root)
            } else if let current = try? CanonicalPath.canonicalize(FileManager.default.currentDirectoryPath),
                      CanonicalPath.isSameOrDescendant(current, of: root) {
                target = current
            } else {
                target = root
            }
            guard let stamp = FileStamp.of(target) else {
                throw UbiquityError(.notFound, "PATH '\(path ?? target)' does not exist (\(target))")
            }
            let snapshot = statusSnapshot(of: stamp.isDirectory ? target : CanonicalPath.parentPath(of: target))
            var lister = Lister(snapshot: snapshot, long: long, json: json, all: all,
                                color: !json && Terminal.colorEnabled())
            if stamp.isDirectory {
                try lister.list(directory: target, prefix: "", recursive: recursive)
            } else {
                let kind: UInt8 = stamp.isSymbolicLink ? Lister.symlink : Lister.file
                lister.emit(Entry(name: path ?? CanonicalPath.lastComponent(of: target), path: target, kind: kind))
            }
            lister.output.flush()
        }
    }

    /// The index rows under `directory`, or an empty snapshot (every status unknown).
    func statusSnapshot(of directory: String) -> IndexStatusSnapshot {
        let environment = ProcessInfo.processInfo.environment
        let database = (try? index.map(CLI.absolutePath)) ?? nil
            ?? environment["UBIQUITY_INDEX_DATABASE"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? UbiquityPaths().stateDirectory.appendingPathComponent("index.sqlite").path
        do {
            return try IndexStatusSnapshot.read(databasePath: database, under: directory, recursive: recursive)
        } catch {
            folder.note("ls", "status unknown: \(error) (start `ubiq daemon` to index the folder)")
            return IndexStatusSnapshot(attributes: [:])
        }
    }
}

/// The walk and the output of `ubiq ls`.
struct Lister {
    static let unknown: UInt8 = 0, folder: UInt8 = 4, file: UInt8 = 8, symlink: UInt8 = 10

    let snapshot: IndexStatusSnapshot
    let long: Bool
    let json: Bool
    let all: Bool
    let color: Bool
    var output = OutputBuffer()

    init(snapshot: IndexStatusSnapshot, long: Bool, json: Bool, all: Bool, color: Bool) {
        self.snapshot = snapshot
        self.long = long
        self.json = json
        self.all = all
        self.color = color
    }

    /// Lists `directory`'s entries (sorted byte-wise), descending into folders when `recursive`.
    mutating func list(directory: String, prefix: String, recursive: Bool) throws {
        let entries = try Self.read(directory: directory, all: all)
        for entry in entries {
            var shown = entry
            shown.name = prefix + entry.name
            emit(shown)
            if recursive, entry.kind == Self.folder {
                do {
                    try list(directory: entry.path, prefix: shown.name + "/", recursive: true)
                } catch {
                    _ = CLI.report(error, command: "ls")  // an unreadable subfolder: say so, go on
                }
            }
        }
    }

    /// The entries of `directory` (`readdir`: the kind from `d_type`, `lstat` only when unknown).
    static func read(directory: String, all: Bool) throws -> [ListItems.Entry] {
        guard let handle = opendir(directory) else { throw UbiquityError.posix("opendir", path: directory) }
        defer { closedir(handle) }
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        var entries: [ListItems.Entry] = []
        let base = directory == "/" ? "" : directory
        while let raw = readdir(handle) {
            let name = String(cString: UnsafeRawPointer(raw).advanced(by: nameOffset).assumingMemoryBound(to: CChar.self))
            if name == "." || name == ".." { continue }
            if !all, name.utf8.first == UInt8(ascii: ".") { continue }
            let path = base + "/" + name
            var kind = raw.pointee.d_type
            if kind == unknown, let stamp = FileStamp.of(path) {
                kind = stamp.isDirectory ? folder : stamp.isSymbolicLink ? symlink : file
            }
            entries.append(ListItems.Entry(name: name, path: path, kind: kind))
        }
        // Byte-wise, as `LC_ALL=C ls` (strcmp on the strings' own UTF-8: no copies).
        entries.sort { a, b in a.name.withCString { pa in b.name.withCString { pb in strcmp(pa, pb) < 0 } } }
        return entries
    }

    static func kindName(_ kind: UInt8) -> String {
        switch kind {
        case folder: return "folder"
        case file: return "file"
        case symlink: return "symlink"
        default: return "other"
        }
    }

    /// Prints one item.
    mutating func emit(_ entry: ListItems.Entry) {
        let status = ListingStatus(snapshot[entry.path])
        if json {
            let stamp = FileStamp.of(entry.path)
            output.line(CLI.jsonObject([
                ("path", entry.path), ("name", entry.name), ("kind", Self.kindName(entry.kind)),
                ("size", stamp.map { Int($0.size) }), ("modified", stamp.map { Self.isoTimestamp($0.modificationNanoseconds) }),
                ("status", status.label), ("percent", status.percent),
            ]))
            return
        }
        let name = entry.kind == Self.folder ? entry.name + "/" : entry.name
        let text = status.text
        var statusColumn = text + String(repeating: " ", count: max(0, 16 - text.utf8.count))
        if color, status.color != 0 { statusColumn = Terminal.paint(statusColumn, status.color, enabled: true) }
        if long {
            let stamp = FileStamp.of(entry.path)
            let size = stamp.map { String($0.size) } ?? "?"
            let date = stamp.map { Self.localTimestamp($0.modificationNanoseconds) } ?? "?"
            output.line(statusColumn + "  " + String(repeating: " ", count: max(0, 12 - size.count)) + size + "  " + date + "  " + name)
        } else {
            output.line(statusColumn + "  " + name)
        }
    }

    /// `2026-11-25T15:39:09.123Z`.
    static func isoTimestamp(_ nanoseconds: Int64) -> String {
        var seconds = time_t(nanoseconds / 1_000_000_000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let millis = Int((nanoseconds % 1_000_000_000) / 1_000_000)
        return "\(parts.tm_year + 1900)-\(pad(parts.tm_mon + 1))-\(pad(parts.tm_mday))T\(pad(parts.tm_hour)):\(pad(parts.tm_min)):\(pad(parts.tm_sec)).\(pad(Int32(millis), 3))Z"
    }

    /// `2026-11-25 15:39` in local time.
    static func localTimestamp(_ nanoseconds: Int64) -> String {
        var seconds = time_t(nanoseconds / 1_000_000_000)
        var parts = tm()
        localtime_r(&seconds, &parts)
        return "\(parts.tm_year + 1900)-\(pad(parts.tm_mon + 1))-\(pad(parts.tm_mday)) \(pad(parts.tm_hour)):\(pad(parts.tm_min))"
    }

    static func pad(_ value: Int32, _ width: Int = 2) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }
}
