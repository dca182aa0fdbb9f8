// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// The coordination service's wire protocol: one message per line, fields separated by tabs,
/// with `\\`, `\t` and `\n` escaped. Documented in `docs/coordination-protocol.md`.
package enum WireMessage: Sendable, Equatable {
    // client → daemon
    case hello(pid: Int32)
    case addPresenter(id: UInt64, purpose: String, path: String?)
    case removePresenter(id: UInt64)
    case updatePresenter(id: UInt64, path: String?)
    case claim(id: UInt64, purpose: String, isPrepare: Bool, timeoutMilliseconds: Int64, items: [ItemRequest])
    case cancel(id: UInt64)
    case finish(id: UInt64)
    case didMove(from: String, to: String, purpose: String)
    case reply(messageID: UInt64, error: UbiquityErrorWire?)
    case version(VersionEventKind, path: String, versionID: String)
    case attributes(path: String, keys: [String])
    // daemon → client
    case presenterAdded(id: UInt64)
    case granted(id: UInt64)
    case failed(id: UInt64, error: UbiquityErrorWire)
    case message(messageID: UInt64, presenterID: UInt64, PresenterMessage)
}

/// An error as it crosses the wire: its code name and message.
package struct UbiquityErrorWire: Sendable, Equatable {
    package var code: String
    package var message: String
    package init(_ error: UbiquityError) {
        code = error.code.description
        message = error.message
    }
    package var error: UbiquityError { UbiquityError(UbiquityError.Code(name: code) ?? .io, message) }
}

extension WireMessage {
    package func encoded() -> [UInt8] {
        var fields: [String]
        func opt(_ s: String?) -> String { s.map { "+" + $0 } ?? "-" }
        switch self {
        case .hello(let pid): fields = ["hello", "\(pid)"]
        case .addPresenter(let id, let purpose, let path): fields = ["add", "\(id)", purpose, opt(path)]
        case .removePresenter(let id): fields = ["remove", "\(id)"]
        case .updatePresenter(let id, let path): fields = ["update", "\(id)", opt(path)]
        case .claim(let id, let purpose, let isPrepare, let timeout, let items):
            fields = ["claim", "\(id)", purpose, isPrepare ? "1" : "0", "\(timeout)", "\(items.count)"]
            for item in items {
                switch item.access {
                case .read(let o): fields += [item.path, "r", "\(o.rawValue)"]
                case .write(let o): fields += [item.path, "w", "\(o.rawValue)"]
                }
            }
        case .cancel(let id): fields = ["cancel", "\(id)"]
        case .finish(let id): fields = ["finish", "\(id)"]
        case .didMove(let from, let to, let purpose): fields = ["moved", from, to, purpose]
        case .reply(let messageID, let error):
            fields = ["reply", "\(messageID)"] + (error.map { [$0.code, $0.message] } ?? [])
        case .version(let kind, let path, let versionID): fields = ["version", kind.rawValue, path, versionID]
        case .attributes(let path, let keys): fields = ["attributes", path] + keys
        case .presenterAdded(let id): fields = ["added", "\(id)"]
        case .granted(let id): fields = ["granted", "\(id)"]
        case .failed(let id, let error): fields = ["failed", "\(id)", error.code, error.message]
        case .message(let messageID, let presenterID, let message):
            fields = ["msg", "\(messageID)", "\(presenterID)"] + Self.fields(of: message)
        }
        var out: [UInt8] = []
        out.reserveCapacity(64)
        for (i, field) in fields.enumerated() {
            if i > 0 { out.append(9) }
            for byte in field.utf8 {
                switch byte {
                case 92: out += [92, 92]
                case 9: out += [92, 116]
                case 10: out += [92, 110]
                default: out.append(byte)
                }
            }
        }
        return out
    }

    private static func fields(of message: PresenterMessage) -> [String] {
        switch message {
        case .relinquishToReader(let token): return ["relinquishToReader", "\(token)"]
        case .relinquishToWriter(let token): return ["relinquishToWriter", "\(token)"]
        case .savePresentedItemChanges: return ["save"]
        case .accommodateDeletion: return ["accommodateDeletion"]
        case .accommodateSubitemDeletion(let path): return ["accommodateSubitemDeletion", path]
        case .reacquire(let token): return ["reacquire", "\(token)"]
        case .didChange: return ["didChange"]
        case .didMove(let to): return ["didMove", to]
        case .subitemDidAppear(let path): return ["subitemDidAppear", path]
        case .subitemDidChange(let path): return ["subitemDidChange", path]
        case .subitemDidMove(let from, let to): return ["subitemDidMove", from, to]
        case .versionEvent(let kind, let path, let id, let subitem): return ["version", kind.rawValue, path, id, subitem ? "1" : "0"]
        case .ubiquityAttributesChanged(let keys): return ["attributes"] + keys
        }
    }

    /// Decodes a line; throws `protocolError` for anything malformed.
    package init(decoding line: [UInt8]) throws {
        var fields: [String] = []
        var current: [UInt8] = []
        var escaped = false
        for byte in line {
            if escaped {
                current.append(byte == 116 ? 9 : byte == 110 ? 10 : byte)
                escaped = false
            } else if byte == 92 {
                escaped = true
            } else if byte == 9 {
                fields.append(String(decoding: current, as: UTF8.self))
                current.removeAll(keepingCapacity: true)
            } else {
                current.append(byte)
            }
        }
        fields.append(String(decoding: current, as: UTF8.self))
        var reader = FieldReader(fields: fields)
        let kind = try reader.string()
        switch kind {
        case "hello": self = .hello(pid: Int32(try reader.int()))
        case "add": self = .addPresenter(id: try reader.uint(), purpose: try reader.string(), path: try reader.optional())
        case "remove": self = .removePresenter(id: try reader.uint())
        case "update": self = .updatePresenter(id: try reader.uint(), path: try reader.optional())
        case "claim":
            let id = try reader.uint(), purpose = try reader.string(), prepare = try reader.string() == "1"
            let timeout = Int64(try reader.int()), count = try reader.int()
            guard (0...10_000).contains(count) else { throw reader.malformed() }
            var items: [ItemRequest] = []
            for _ in 0..<count {
                let path = try reader.string(), mode = try reader.string(), raw = UInt(try reader.uint())
                guard path.hasPrefix("/") else { throw reader.malformed() }
                switch mode {
                case "r": items.append(ItemRequest(path: path, access: .read(.init(rawValue: raw))))
                case "w": items.append(ItemRequest(path: path, access: .write(.init(rawValue: raw))))
                default: throw reader.malformed()
                }
            }
            self = .claim(id: id, purpose: purpose, isPrepare: prepare, timeoutMilliseconds: timeout, items: items)
        case "cancel": self = .cancel(id: try reader.uint())
        case "finish": self = .finish(id: try reader.uint())
        case "moved": self = .didMove(from: try reader.string(), to: try reader.string(), purpose: try reader.string())
        case "reply":
            let id = try reader.uint()
            if reader.atEnd { self = .reply(messageID: id, error: nil) } else {
                var wire = UbiquityErrorWire(UbiquityError(.io, ""))
                wire.code = try reader.string()
                wire.message = try reader.string()
                self = .reply(messageID: id, error: wire)
            }
        case "version":
            guard let kind = VersionEventKind(rawValue: try reader.string()) else { throw reader.malformed() }
            self = .version(kind, path: try reader.string(), versionID: try reader.string())
        case "attributes": self = .attributes(path: try reader.string(), keys: reader.rest())
        case "added": self = .presenterAdded(id: try reader.uint())
        case "granted": self = .granted(id: try reader.uint())
        case "failed":
            let id = try reader.uint()
            var wire = UbiquityErrorWire(UbiquityError(.io, ""))
            wire.code = try reader.string()
            wire.message = try reader.string()
            self = .failed(id: id, error: wire)
        case "msg":
            let messageID = try reader.uint(), presenterID = try reader.uint()
            let name = try reader.string()
            let message: PresenterMessage
            switch name {
            case "relinquishToReader": message = .relinquishToReader(token: try reader.uint())
            case "relinquishToWriter": message = .relinquishToWriter(token: try reader.uint())
            case "save": message = .savePresentedItemChanges
            case "accommodateDeletion": message = .accommodateDeletion
            case "accommodateSubitemDeletion": message = .accommodateSubitemDeletion(path: try reader.string())
            case "reacquire": message = .reacquire(token: try reader.uint())
            case "didChange": message = .didChange
            case "didMove": message = .didMove(to: try reader.string())
            case "subitemDidAppear": message = .subitemDidAppear(path: try reader.string())
            case "subitemDidChange": message = .subitemDidChange(path: try reader.string())
            case "subitemDidMove": message = .subitemDidMove(from: try reader.string(), to: try reader.string())
            case "version":
                guard let kind = VersionEventKind(rawValue: try reader.string()) else { throw reader.malformed() }
                message = .versionEvent(kind, itemPath: try reader.string(), versionID: try reader.string(), subitem: try reader.string() == "1")
            case "attributes": message = .ubiquityAttributesChanged(keys: reader.rest())
            default: throw reader.malformed()
            }
            self = .message(messageID: messageID, presenterID: presenterID, message)
        default:
            throw reader.malformed()
        }
    }
}

private struct FieldReader {
    var fields: [String]
    var index = 0
    var atEnd: Bool { index >= fields.count }
    func malformed() -> UbiquityError {
        UbiquityError(.protocolError, "malformed coordination message: \(fields.prefix(8).joined(separator: " | "))")
    }
    mutating func string() throws -> String {
        guard index < fields.count else { throw malformed() }
        defer { index += 1 }
        return fields[index]
    }
    mutating func int() throws -> Int {
        guard let value = Int(try string()) else { throw malformed() }
        return value
    }
    mutating func uint() throws -> UInt64 {
        guard let value = UInt64(try string()) else { throw malformed() }
        return value
    }
    mutating func optional() throws -> String? {
        let raw = try string()
        if raw == "-" { return nil }
        guard raw.first == "+" else { throw malformed() }
        return String(raw.dropFirst())
    }
    mutating func rest() -> [String] {
        defer { index = fields.count }
        return Array(fields[min(index, fields.count)...])
    }
}
