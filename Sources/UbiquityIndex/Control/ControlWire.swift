import Foundation
import UbiquityCore
import UbiquityStore

/// The daemon's control socket protocol: one JSON object per line, both ways
/// (`docs/control-protocol.md`). A connection carries one request; a query's events follow
/// until the client closes the connection or sends `{"op":"stop"}`.
package enum ControlWire {
    /// The protocol version the daemon speaks.
    package static let version = 1

    /// The control socket: `$UBIQUITY_CONTROL_SOCKET`, else `$XDG_RUNTIME_DIR/ubiquity/control.sock`.
    package static func socketPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let path = environment["UBIQUITY_CONTROL_SOCKET"], path.hasPrefix("/") { return path }
        return UbiquityPaths(environment: environment).runtimeDirectory.appendingPathComponent("control.sock").path
    }

    /// What a request asks for; on the wire, the raw value.
    package enum Op: String, Codable, Sendable, CaseIterable, CustomStringConvertible {
        /// A metadata query with live updates.
        case query
        /// Ends a query's live updates on its connection.
        case stop
        /// The index's status and the folder sync's health.
        case status
        /// Rescans a folder.
        case rescan
        /// Waits until the index has caught up with a folder (read your writes).
        case sync
        /// Evicts an item (the folder sync).
        case evict
        /// Downloads an item (the folder sync).
        case download
        /// Pins an item (Keep Downloaded).
        case pin
        /// Unpins an item.
        case unpin
        /// An item's sync state.
        case item
        /// Confirms the deletes the folder sync paused.
        case confirmDeletes = "confirm-deletes"

        /// The raw value, as messages name the op.
        package var description: String { rawValue }

        /// Decodes the raw value; an op this build does not know is an error naming the known ones.
        package init(from decoder: any Decoder) throws {
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let op = Self(rawValue: text) else {
                throw UbiquityError(.invalidArgument, "unknown op '\(text)': expected \(Self.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            self = op
        }
    }

    /// What a reply line is; on the wire, the raw value.
    package enum Event: String, Codable, Sendable, CaseIterable, CustomStringConvertible {
        /// Results found so far (a query).
        case gathering
        /// The first results are complete (a query).
        case finishGathering
        /// Live changes to the results (a query).
        case update
        /// The index's status (`status`).
        case status
        /// A transfer's progress (`evict`, `download`).
        case progress
        /// An item's sync state (`item`).
        case item
        /// The request is done.
        case done
        /// The request failed.
        case error
        /// A line a daemon newer than this build sent: skipped by those who wait for another.
        case unknown

        /// The raw value, as messages name the event.
        package var description: String { rawValue }

        /// Decodes the raw value; an event this build does not know is ``unknown``.
        package init(from decoder: any Decoder) throws {
            self = Self(rawValue: try decoder.singleValueContainer().decode(String.self)) ?? .unknown
        }
    }

    /// A request from a client.
    package struct Request: Codable, Sendable {
        /// What is asked for.
        package var op: Op
        /// The query (for `query`).
        package var query: QueryRequest?
        /// The folder (for `rescan` and `sync`); the item (for `evict`, `download` and `item`).
        package var path: String?
        /// For `download`: whether the reply waits until the content is here (default true);
        /// progress lines come first.
        package var wait: Bool?

        /// A request.
        package init(op: Op, query: QueryRequest? = nil, path: String? = nil, wait: Bool? = nil) {
            self.op = op
            self.query = query
            self.path = path
            self.wait = wait
        }
    }

    /// A line from the daemon.
    package struct Reply: Codable, Sendable {
        /// What this line is.
        package var event: Event
        /// Results (for `gathering`).
        package var items: [IndexRecord]?
        /// The result count (for `finishGathering`).
        package var count: Int?
        /// Items that entered the results (for `update`).
        package var added: [IndexRecord]?
        /// Items that changed (for `update`).
        package var changed: [IndexRecord]?
        /// Items that left the results (for `update`).
        package var removed: [IndexRecord]?
        /// The index status (for `status`).
        package var status: IndexStatusReport?
        /// The items evicted or downloaded (for `done` of `evict` and `download`), absolute.
        package var paths: [String]?
        /// The item a `progress` line is about (absolute).
        package var path: String?
        /// Percent done, 0…100 (for `progress`).
        package var percent: Double?
        /// Bytes done and in all (for `progress` of `evict`: the bytes freed of all to free).
        package var bytes: Int64?, total: Int64?
        /// An item's sync state (for `item`).
        package var item: ItemSyncState?
        /// The error code name (for `error`).
        package var code: String?
        /// The error message (for `error`).
        package var message: String?

        /// A reply of kind `event`.
        package init(event: Event) { self.event = event }

        /// The reply carrying a query event.
        package init(_ event: QueryEvent) {
            switch event {
            case .gatheringProgress(let records):
                self.init(event: .gathering)
                items = records
            case .finishGathering(let count):
                self.init(event: .finishGathering)
                self.count = count
            case .update(let update):
                self.init(event: .update)
                added = update.added
                changed = update.changed
                removed = update.removed
            case .failed(let error):
                self.init(error: error)
            }
        }

        /// The reply carrying an error.
        package init(error: UbiquityError) {
            self.init(event: .error)
            code = error.code.description
            message = error.message
        }

        /// The query event this reply carries, if it carries one.
        package var queryEvent: QueryEvent? {
            switch event {
            case .gathering: .gatheringProgress(items ?? [])
            case .finishGathering: .finishGathering(count: count ?? 0)
            case .update: .update(QueryUpdate(added: added ?? [], changed: changed ?? [], removed: removed ?? []))
            case .error: .failed(self.error)
            case .status, .progress, .item, .done, .unknown: nil
            }
        }

        /// The error this reply carries (a protocol error when it carries none).
        package var error: UbiquityError {
            UbiquityError(code.flatMap(UbiquityError.Code.init(name:)) ?? .protocolError,
                          message ?? "the daemon sent '\(event)' without a message")
        }
    }

    /// Encodes a value as one line (no line break inside: JSON escapes them).
    package static func encode(_ value: some Encodable) throws -> [UInt8] {
        Array(try encoder.encode(value))
    }

    /// Decodes one line.
    package static func decode<T: Decodable>(_ type: T.Type, from line: [UInt8]) throws -> T {
        do {
            return try decoder.decode(type, from: Data(line))
        } catch {
            throw UbiquityError(.protocolError, "malformed control message: \(String(decoding: line.prefix(200), as: UTF8.self))",
                                underlying: error)
        }
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }()

    private static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return decoder
    }()
}

/// What `ubiq index status` reports.
package struct IndexStatusReport: Codable, Sendable {
    /// The index file (nil for an in-memory index).
    package var database: String?
    /// Items indexed.
    package var items: Int
    /// Folders among them.
    package var folders: Int
    /// Roots indexed and watched, with their scan state.
    package var roots: [Root]
    /// Watches held by the watcher.
    package var watches: Int
    /// Whether the index was rebuilt because its file was missing or corrupt.
    package var rebuilt: Bool
    /// Warnings for the user (overflow, watch limit), most recent last.
    package var messages: [String]
    /// The daemon's folder sync, when it syncs one (nil from a daemon that predates it).
    package var sync: SyncHealthReport?

    /// One indexed root.
    package struct Root: Codable, Sendable {
        /// The folder.
        package var path: String
        /// When its last full scan finished.
        package var lastScan: Date?
        /// Whether a rescan is pending.
        package var rescanPending: Bool
        /// Why, if known.
        package var message: String?

        /// A root entry.
        package init(path: String, lastScan: Date?, rescanPending: Bool, message: String?) {
            self.path = path
            self.lastScan = lastScan
            self.rescanPending = rescanPending
            self.message = message
        }
    }

    /// A report.
    package init(database: String?, items: Int, folders: Int, roots: [Root], watches: Int, rebuilt: Bool, messages: [String]) {
        self.database = database
        self.items = items
        self.folders = folders
        self.roots = roots
        self.watches = watches
        self.rebuilt = rebuilt
        self.messages = messages
    }
}
