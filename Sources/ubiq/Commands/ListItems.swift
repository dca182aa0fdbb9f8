// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Glibc
import Synchronization
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
            conflict, excluded, not uploaded (indexed, never sent), unknown (not in the index, \
            or no index: the daemon is not running or has not indexed it yet), or deleted (only \
            in the index: gone from disk, the daemon has not taken the deletion in yet). Colour \
            only on a terminal and without NO_COLOR.

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

    func run() throws {
        try CLI.run("ls") {
            let root = try folder.root()
            var target: String
            if let path {
                target = try folder.resolve(path, name: "PATH", root: root)
            } else if let current = try? CanonicalPath.canonicalize(FileManager.default.currentDirectoryPath),
                      CanonicalPath.isSameOrDescendant(current, of: root) {
                target = current
            } else {
                target = root
            }
            // an app's folder (a link in the folder to the app container's documents) lists as
            // the folder it stands for, as Finder shows iCloud Drive's app folders
            if FileStamp.of(target)?.isSymbolicLink == true,
               let resolved = try? CanonicalPath.canonicalize(target, resolveLast: true),
               FolderOptions.isThroughAppFolder(target, resolved, root: root) {
                target = resolved
            }
            guard let stamp = FileStamp.of(target) else {
                throw UbiquityError(.notFound, "PATH '\(path ?? target)' does not exist (\(target))")
            }
            let database = indexDatabase()
            var lister = Lister(long: long, json: json, color: !json && Terminal.colorEnabled())
            if stamp.isDirectory {
                let options = IndexListing.Options(recursive: recursive, all: all, stat: long || json)
                let unreadable = Mutex<(any Error)?>(nil)
                let recursive = self.recursive, listed = target
                // the index is read on another thread while this one reads the folder tree
                try IndexListing.walk(directory: listed, options: options, readingSnapshot: {
                    do {
                        return try IndexStatusSnapshot.read(databasePath: database, under: listed, recursive: recursive)
                    } catch {
                        unreadable.withLock { $0 = error }
                        return IndexStatusSnapshot(attributes: [:])
                    }
                }) { item, path, start in
                    lister.emit(item, path: path, nameStart: start)
                } failed: { _, error in
                    lister.output.flush()
                    _ = CLI.report(error, command: "ls")  // an unreadable subfolder: say so, go on
                }
                if let error = unreadable.withLock({ $0 }) { noteUnknownStatus(error) }
            } else {
                let snapshot = statusSnapshot(of: CanonicalPath.parentPath(of: target), database: database)
                let kind: IndexListing.Kind = stamp.isSymbolicLink ? .symlink : .file
                let item = IndexListing.Item(kind: kind, attributes: snapshot[target], isOnDisk: true,
                                             size: stamp.size, modificationNanoseconds: stamp.modificationNanoseconds)
                let shown = path ?? CanonicalPath.lastComponent(of: target)
                let bytes = Array((target + "\u{0}" + shown).utf8)
                bytes.withUnsafeBufferPointer { buffer in
                    lister.emit(item, path: UnsafeBufferPointer(rebasing: buffer[..<target.utf8.count]),
                                name: UnsafeBufferPointer(rebasing: buffer[(target.utf8.count + 1)...]))
                }
            }
            lister.output.flush()
        }
    }

    /// The index file the status comes from.
    func indexDatabase() -> String {
        let environment = ProcessInfo.processInfo.environment
        return (try? index.map(CLI.absolutePath)) ?? nil
            ?? environment["UBIQUITY_INDEX_DATABASE"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? UbiquityPaths().stateDirectory.appendingPathComponent("index.sqlite").path
    }

    /// The index rows under `directory`, or an empty snapshot (every status unknown).
    func statusSnapshot(of directory: String, database: String) -> IndexStatusSnapshot {
        do {
            return try IndexStatusSnapshot.read(databasePath: database, under: directory, recursive: recursive)
        } catch {
            noteUnknownStatus(error)
            return IndexStatusSnapshot(attributes: [:])
        }
    }

    /// Says why every status is unknown (no index, or one that cannot be read).
    func noteUnknownStatus(_ error: any Error) {
        folder.note("ls", "status unknown: \(error) (start `ubiq daemon` to index the folder)")
    }
}

/// The output of `ubiq ls`: lines written as bytes into one buffer (no `String` per line).
struct Lister {
    let long: Bool
    let json: Bool
    let color: Bool
    var output = OutputBuffer()
    /// The `-l` date column of the last minute formatted (files of a tree share a few).
    private var lastMinute: Int64 = .min
    private var lastDate: [UInt8] = []

    init(long: Bool, json: Bool, color: Bool) {
        self.long = long
        self.json = json
        self.color = color
    }

    static func kindName(_ kind: IndexListing.Kind) -> String {
        switch kind {
        case .folder: return "folder"
        case .file: return "file"
        case .symlink: return "symlink"
        case .other: return "other"
        }
    }

    /// Prints one item of a walk: its name is the path from `nameStart` on.
    mutating func emit(_ item: IndexListing.Item, path: UnsafeBufferPointer<UInt8>, nameStart: Int) {
        emit(item, path: path, name: UnsafeBufferPointer(rebasing: path[nameStart...]))
    }

    /// Prints one item.
    mutating func emit(_ item: IndexListing.Item, path: UnsafeBufferPointer<UInt8>, name: UnsafeBufferPointer<UInt8>) {
        let status = item.isOnDisk ? ListingStatus(item.attributes) : ListingStatus.deleted(item.attributes)
        if json {
            output.append("{\"path\":")
            appendJSONString(path)
            output.append(",\"name\":")
            appendJSONString(name)
            output.append(",\"kind\":\"" + Self.kindName(item.kind) + "\",\"size\":")
            if let size = item.size { output.append(decimal: size) } else { output.append("null") }
            output.append(",\"modified\":")
            if let modified = item.modificationNanoseconds {
                output.append(byte: UInt8(ascii: "\""))
                appendISOTimestamp(modified)
                output.append(byte: UInt8(ascii: "\""))
            } else {
                output.append("null")
            }
            output.append(",\"status\":\"" + status.label + "\",\"percent\":")
            output.append(status.percent.map { String($0) } ?? "null")
            output.append(byte: UInt8(ascii: "}"))
            output.endLine()
            return
        }
        let text = status.text
        let padding = 16 - text.utf8.count
        if color, status.color != 0 {
            output.append(Terminal.paint(text + String(repeating: " ", count: max(0, padding)), status.color, enabled: true))
        } else {
            output.append(text)
            output.append(spaces: padding)
        }
        output.append("  ")
        if long {
            if let size = item.size {
                var digits = 1, rest = size
                while rest >= 10 { rest /= 10; digits += 1 }
                output.append(spaces: 12 - digits)
                output.append(decimal: size)
            } else {
                output.append("           ?")
            }
            output.append("  ")
            if let modified = item.modificationNanoseconds { appendLocalTimestamp(modified) } else { output.append("               ?") }
            output.append("  ")
        }
        output.append(name)
        if item.kind == .folder { output.append(byte: UInt8(ascii: "/")) }
        output.endLine()
    }

    /// A JSON string literal of UTF-8 bytes (invalid sequences become U+FFFD).
    mutating func appendJSONString(_ bytes: UnsafeBufferPointer<UInt8>) {
        var plain = true
        for byte in bytes where byte < 0x20 || byte >= 0x80 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
            plain = false
            break
        }
        if plain {
            output.append(byte: UInt8(ascii: "\""))
            output.append(bytes)
            output.append(byte: UInt8(ascii: "\""))
        } else {
            output.append(CLI.jsonString(String(decoding: bytes, as: UTF8.self)))
        }
    }

    /// `2026-11-25T15:39:09.123Z`.
    mutating func appendISOTimestamp(_ nanoseconds: Int64) {
        var seconds = time_t(Self.floorDivide(nanoseconds, 1_000_000_000))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        output.append(decimal: Int64(parts.tm_year) + 1900, width: 4)
        output.append(byte: UInt8(ascii: "-"))
        output.append(decimal: Int64(parts.tm_mon) + 1, width: 2)
        output.append(byte: UInt8(ascii: "-"))
        output.append(decimal: Int64(parts.tm_mday), width: 2)
        output.append(byte: UInt8(ascii: "T"))
        output.append(decimal: Int64(parts.tm_hour), width: 2)
        output.append(byte: UInt8(ascii: ":"))
        output.append(decimal: Int64(parts.tm_min), width: 2)
        output.append(byte: UInt8(ascii: ":"))
        output.append(decimal: Int64(parts.tm_sec), width: 2)
        output.append(byte: UInt8(ascii: "."))
        output.append(decimal: (nanoseconds - Int64(seconds) * 1_000_000_000) / 1_000_000, width: 3)
        output.append(byte: UInt8(ascii: "Z"))
    }

    /// `2026-11-25 15:39` in local time (formatted once per minute).
    mutating func appendLocalTimestamp(_ nanoseconds: Int64) {
        let minute = Self.floorDivide(nanoseconds, 60_000_000_000)
        if minute != lastMinute {
            lastMinute = minute
            var seconds = time_t(minute * 60)
            var parts = tm()
            localtime_r(&seconds, &parts)
            lastDate = Array(("\(parts.tm_year + 1900)-\(Self.pad(parts.tm_mon + 1))-\(Self.pad(parts.tm_mday)) "
                              + "\(Self.pad(parts.tm_hour)):\(Self.pad(parts.tm_min))").utf8)
        }
        lastDate.withUnsafeBufferPointer { output.append($0) }
    }

    static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        value >= 0 ? value / divisor : -((-value + divisor - 1) / divisor)
    }

    static func pad(_ value: Int32, _ width: Int = 2) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }
}
