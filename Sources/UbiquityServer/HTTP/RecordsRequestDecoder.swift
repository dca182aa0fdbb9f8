// SPDX-License-Identifier: Apache-2.0
import Foundation
import Hummingbird
import NIOCore
import UbiquityWire

/// How the `/database/1/…` routes decode their request bodies (`request.decode(as:context:)`):
/// Foundation's `JSONDecoder`, straight from the body into the operation's `Decodable` request
/// type (a ``WireReadable``, which names the path of any mistake). As CloudKit reads them, an
/// empty body is `{}`, and a body that is not JSON is BAD_REQUEST saying where and why.
package struct RecordsRequestDecoder: RequestDecoder {
    /// Nesting deeper than this is refused before decoding (as ``JSONValue/parse(_:maximumDepth:)``).
    static let maximumDepth = 64

    /// Decodes `type` from the request's body (collected already, within the server's budget,
    /// by ``RecordsAuthMiddleware``).
    package func decode<T: Decodable>(_ type: T.Type, from request: Request, context: some RequestContext) async throws -> T {
        try await Self.decode(type, from: request.body.collect(upTo: .max).readableBytesView)
    }

    /// Decodes `type` from `body`.
    static func decode<T: Decodable>(_ type: T.Type, from body: some Collection<UInt8>) throws -> T {
        let data = JSONValue.isBlank(body) ? Data("{}".utf8) : Data(body)
        // JSONDecoder says only "not valid JSON", and accepts invalid UTF-8 in strings it does not
        // read, NUL characters (which no store keeps) and deeper nesting: the validating parser
        // explains what is wrong, on that path only
        guard String(validating: data, as: UTF8.self) != nil, let depth = Self.checkedDepth(of: data), depth <= Self.maximumDepth else {
            throw Self.explained(data)
        }
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch DecodingError.dataCorrupted(let context) where context.codingPath.isEmpty {
            throw Self.explained(data)
        } catch let error as DecodingError {
            throw WireError(.badRequest, Self.describe(error))
        }
    }

    /// The validating parser's account of what is wrong with `data`.
    private static func explained(_ data: Data) -> WireError {
        do {
            _ = try JSONValue.parse(data, maximumDepth: maximumDepth)
            return WireError(.badRequest, "request body: malformed JSON")
        } catch {
            return WireError.badRequest(error)
        }
    }

    /// The deepest nesting of arrays and objects in `data` (brackets inside strings not counted),
    /// or nil when a string holds an escaped NUL (`\u0000`).
    static func checkedDepth(of data: Data) -> Int? {
        data.withUnsafeBytes { checkedDepth(of: $0.bindMemory(to: UInt8.self)) }
    }

    private static func checkedDepth(of bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var depth = 0
        var deepest = 0
        var inString = false
        var escaped = false
        for index in bytes.indices {
            let byte = bytes[index]
            if inString {
                if escaped {
                    escaped = false
                    if byte == UInt8(ascii: "u"), bytes[(index + 1)...].prefix(4).elementsEqual("0000".utf8) { return nil }
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"): depth += 1; deepest = max(deepest, depth)
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return deepest
    }

    /// A decoding error the wire types did not name themselves, with its path.
    private static func describe(_ error: DecodingError) -> String {
        let (context, what): (DecodingError.Context, String) = switch error {
        case .typeMismatch(let type, let context): (context, "expected \(type)")
        case .valueNotFound(let type, let context): (context, "expected \(type), got null")
        case .keyNotFound(let key, let context): (context, "\(key.stringValue): required")
        case .dataCorrupted(let context): (context, context.debugDescription)
        @unknown default: (DecodingError.Context(codingPath: [], debugDescription: ""), "\(error)")
        }
        var path = ""
        for key in context.codingPath {
            if let index = key.intValue { path += "[\(index)]" } else { path += path.isEmpty ? key.stringValue : ".\(key.stringValue)" }
        }
        return "\(path.isEmpty ? "request body" : path): \(what)"
    }
}
