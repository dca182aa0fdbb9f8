// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityStore

/// What `ubiq status FOLDER` adds for a folder: how many items below it are in each sync state,
/// from the daemon's index (one read-only query, as `ubiq ls` reads it), and the items that
/// need attention or are moving — uploading or downloading (with progress), in conflict,
/// excluded.
struct FolderStatusSummary: Equatable {
    /// One item worth naming.
    struct Item: Equatable {
        /// The path relative to the folder.
        var name: String
        /// `uploading`, `downloading`, `conflict` or `excluded` (``ListingStatus`` labels).
        var status: String
        /// Transfer progress 0…100 (uploading and downloading only).
        var percent: Double?
    }

    /// Items counted (the folder itself not included).
    var total = 0
    /// Items counted per ``ListingStatus`` label (`uploaded`, `not uploaded`, …).
    var counts: [String: Int] = [:]
    /// The items moving or needing attention, in path order.
    var items: [Item] = []
    /// Whether an index was read (false: the daemon has not indexed the folder; counts empty).
    var indexed = false

    /// At most this many items are named (the counts are always whole).
    static let itemLimit = 1_000

    /// The labels that name their items.
    static let named: Set<String> = ["uploading", "downloading", "conflict", "excluded"]

    /// The summary of the rows below `folder` (absolute, canonical) in `snapshot`.
    init(folder: String, snapshot: IndexStatusSnapshot, indexed: Bool) {
        self.indexed = indexed
        let prefix = folder.utf8.count + 1
        snapshot.forEachRow { path, attributes, _ in
            guard path.count > prefix else { return }  // the folder's own row
            let status = ListingStatus(attributes)
            total += 1
            counts[status.label, default: 0] += 1
            if Self.named.contains(status.label), items.count < Self.itemLimit {
                items.append(Item(name: String(decoding: path[prefix...], as: UTF8.self), status: status.label, percent: status.percent))
            }
        }
    }

    /// Reads the summary of `folder` from the index file at `database` (no index: an empty,
    /// un-indexed summary).
    static func read(folder: String, database: String) -> FolderStatusSummary {
        guard let snapshot = try? IndexStatusSnapshot.read(databasePath: database, under: folder, recursive: true) else {
            return FolderStatusSummary(folder: folder, snapshot: IndexStatusSnapshot(attributes: [:]), indexed: false)
        }
        return FolderStatusSummary(folder: folder, snapshot: snapshot, indexed: true)
    }

    /// The `items` object of `--json`: the counts by state, and the named items.
    var json: [String: Any] {
        var object: [String: Any] = ["indexed": indexed, "total": total]
        for label in ["uploaded", "not uploaded", "uploading", "downloading", "not downloaded", "conflict", "excluded"] {
            object[Self.key(label)] = counts[label] ?? 0
        }
        object["active"] = items.map { item -> [String: Any] in
            ["path": item.name, "status": item.status, "percent": item.percent.map { $0.rounded() } ?? NSNull()]
        }
        object["activeTruncated"] = items.count < (counts["uploading"] ?? 0) + (counts["downloading"] ?? 0)
            + (counts["conflict"] ?? 0) + (counts["excluded"] ?? 0)
        return object
    }

    /// The JSON key of a label: `not uploaded` → `notUploaded`.
    static func key(_ label: String) -> String {
        let words = label.split(separator: " ")
        return words.enumerated().map { $0.offset == 0 ? String($0.element) : $0.element.capitalized }.joined()
    }

    /// The text lines: the counts, then one line per named item (progress bars for transfers).
    func lines(color: Bool) -> [String] {
        guard indexed else { return ["items:     unknown (no index: start `ubiq daemon` to index the folder)"] }
        let order = ["uploaded", "not uploaded", "uploading", "downloading", "not downloaded", "conflict", "excluded", "unknown"]
        let parts = order.compactMap { label in counts[label].map { "\($0) \(label)" } }
        var lines = ["items:     \(total)" + (parts.isEmpty ? "" : " (" + parts.joined(separator: ", ") + ")")]
        for item in items {
            if let percent = item.percent {
                let arrow = item.status == "uploading" ? "↑" : "↓"
                lines.append("  \(arrow) " + StatusLine.progress(item.name, percent: percent, color: color))
            } else {
                lines.append("  \(item.status): \(item.name)")
            }
        }
        let named = Self.named.reduce(0) { $0 + (counts[$1] ?? 0) }
        if named > items.count { lines.append("  … and \(named - items.count) more (`ubiq ls -R` lists every item)") }
        return lines
    }

    /// The one-line form (`--watch` on a terminal).
    func line(folder: String) -> String {
        let name = (folder as NSString).lastPathComponent
        guard indexed else { return "\(name)  not indexed" }
        var parts = [name, "\(total) items"]
        for label in ["uploading", "downloading", "conflict", "not uploaded"] {
            if let count = counts[label] { parts.append("\(count) \(label)") }
        }
        let moving = items.compactMap(\.percent)
        if !moving.isEmpty { parts.append("\(Int(moving.reduce(0, +) / Double(moving.count)))% average") }
        return parts.joined(separator: "  ")
    }
}
