// SPDX-License-Identifier: Apache-2.0
import UbiquityCore
import UbiquityWire

/// What one server process tells the others when notification logs moved: lines of
/// `container TAB environment TAB user TAB head`. Used as the `NOTIFY` payload on PostgreSQL and
/// as the datagram on SQLite. Container identifiers and user record names hold no tabs or
/// newlines (the server refuses such names).
enum PushAnnouncement {
    /// The heads as payloads of at most `limit` bytes each.
    static func encode(_ heads: [NotificationLogKey: Int64], limit: Int) -> [String] {
        var payloads: [String] = []
        var current = ""
        for (key, head) in heads.sorted(by: { $0.key < $1.key }) {
            let line = "\(key.container)\t\(key.environment.rawValue)\t\(key.user)\t\(head)"
            if !current.isEmpty, current.utf8.count + 1 + line.utf8.count > limit {
                payloads.append(current)
                current = ""
            }
            current += current.isEmpty ? line : "\n" + line
        }
        if !current.isEmpty { payloads.append(current) }
        return payloads
    }

    /// The heads in a payload; malformed lines are skipped.
    static func decode(_ payload: String) -> [NotificationLogKey: Int64] {
        var heads: [NotificationLogKey: Int64] = [:]
        for line in payload.split(separator: "\n") {
            let parts = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard parts.count == 4, let environment = CloudKitEnvironment(rawValue: String(parts[1])), let head = Int64(parts[3]) else { continue }
            let key = NotificationLogKey(container: String(parts[0]), environment: environment, user: String(parts[2]))
            heads[key] = max(heads[key] ?? 0, head)
        }
        return heads
    }
}
