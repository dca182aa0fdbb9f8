// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

/// What the daemon tells the user's hooks about (`$XDG_CONFIG_HOME/ubiquity/hooks/EVENT`).
package enum HookEvent: String, CaseIterable, Sendable, CustomStringConvertible {
    /// A file changed remotely and its new content is on this disk.
    case didDownload = "did-download"
    /// Two devices changed one document: the other content is kept as a conflict version.
    case conflict
    /// A local change reached the server.
    case didUpload = "did-upload"
    /// A local change could not be uploaded (it will be retried unless the error says otherwise).
    case uploadFailed = "upload-failed"
    /// The server refused a change because the account is over its quota.
    case quota
    /// Many items were deleted here at once: the deletes wait for `ubiq sync confirm-deletes`.
    case massDeletePaused = "mass-delete-paused"
    /// The signed-in account changed (signed in, out, or switched).
    case accountChanged = "account-changed"

    /// The event's name, as its hook file is named.
    package var description: String { rawValue }
}

/// One occurrence of an event: the facts hooks get as JSON on stdin and, for the main ones, as
/// environment variables (`UBIQUITY_EVENT`, and `UBIQUITY_<FACT>` for each fact: `path` →
/// `UBIQUITY_PATH`, `container` → `UBIQUITY_CONTAINER`, …).
package struct HookInvocation: Sendable, Hashable {
    /// The event.
    package var event: HookEvent
    /// When it happened.
    package var date: Date
    /// The main facts (`path`, `container`, `device`, `error`, `version`, …), one line each.
    package var facts: [String: String]
    /// More detail for the JSON only (sizes, lists).
    package var details: [String: JSONValue]

    /// An occurrence of `event` now.
    package init(_ event: HookEvent, facts: [String: String] = [:], details: [String: JSONValue] = [:], date: Date = Date()) {
        self.event = event
        self.facts = facts
        self.details = details
        self.date = date
    }

    /// The JSON written to the hook's stdin: `{"event", "time", facts…, "details"}`.
    package var json: JSONValue {
        var object: [String: JSONValue] = ["event": .string(event.rawValue), "time": .string(ISO8601DateFormatter().string(from: date))]
        for (key, value) in facts { object[key] = .string(value) }
        if !details.isEmpty { object["details"] = .object(details) }
        return .object(object)
    }

    /// The environment variables added for the hook.
    package var environment: [String: String] {
        var variables = ["UBIQUITY_EVENT": event.rawValue]
        for (key, value) in facts {
            let name = key.uppercased().map { $0.isLetter || $0.isNumber ? String($0) : "_" }.joined()
            // Environment values cannot hold NUL; facts are single lines.
            variables["UBIQUITY_" + name] = value.replacingOccurrences(of: "\0", with: "")
        }
        return variables
    }
}
