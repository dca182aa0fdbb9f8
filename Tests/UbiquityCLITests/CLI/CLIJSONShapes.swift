// SPDX-License-Identifier: Apache-2.0
import Foundation

// The JSON that `ubiq`'s commands print, as the tests decode it (strict types).

/// `ubiq status --json`.
struct StatusJSON: Decodable {
    static let keys: Set<String> = ["path", "exists", "kind", "target", "size", "modified", "excluded", "conflicts", "sync"]
    var path: String
    var exists: Bool
    var kind: String?
    var target: String?
    var size: Int?
    var modified: String?
    var excluded: Bool
    var conflicts: Int
}

/// One version in `ubiq versions --json`.
struct VersionJSON: Decodable {
    static let keys: Set<String> = ["id", "name", "conflict", "resolved", "modified", "device", "size", "url"]
    var id: String
    var name: String?
    var conflict: Bool
    var resolved: Bool
    var modified: String?
    var device: String?
    var size: Int
    var url: String
}

/// `ubiq versions --json`.
struct VersionsJSON: Decodable {
    static let keys: Set<String> = ["path", "current", "versions", "conflicts"]
    var path: String
    var current: VersionJSON
    var versions: [VersionJSON]
    var conflicts: Int
}

/// `ubiq resolve --json`.
struct ResolveJSON: Decodable {
    static let keys: Set<String> = ["path", "kept", "savedVersion", "resolved", "removed"]
    var path: String
    var kept: String
    var savedVersion: String?
    var resolved: [String]
    var removed: [String]
}

/// One container in `ubiq container url --json` / `container list --json`.
struct ContainerJSON: Decodable, Equatable {
    var identifier: String
    var path: String
    var documents: String
    var isDefault: Bool
}

/// Parses the ISO 8601 timestamps (with milliseconds) the CLI prints.
func parseTimestamp(_ text: String?) -> Date? {
    guard let text else { return nil }
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.date(from: text)
}
