// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

/// A parsed `/database/1/{container}/{environment}/{database}/{operation…}` path. The database
/// segment is optional for the operations CloudKit documents without one (`tokens/…`,
/// `subscriptions/lookup`); user endpoints are on the public database.
package struct DatabasePath: Sendable, Hashable {
    package var container: String
    package var environment: CloudKitEnvironment
    package var scope: CloudKitDatabaseScope
    /// `records/modify`, `zones/list`, `users/current`, …
    package var operation: String

    /// Operations that may come without a database segment.
    static let databaseless: Set<String> = ["tokens/create", "tokens/register", "subscriptions/lookup"]

    /// Parses a raw (percent-encoded) request path; errors are BAD_REQUEST naming the segment.
    package init(rawPath: String) throws {
        let raw = rawPath.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        var segments: [String] = []
        for segment in raw {
            // (most paths have nothing to decode: Foundation's decoding is not free)
            guard let decoded = segment.contains("%") ? String(segment).removingPercentEncoding : String(segment) else {
                throw WireError(.badRequest, "path segment \(segment) is not valid percent-encoded UTF-8")
            }
            guard decoded != ".", decoded != "..", !decoded.contains("/"), !decoded.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
                throw WireError(.badRequest, "path segment \(decoded.debugDescription) is not allowed")
            }
            segments.append(decoded)
        }
        if segments.last == "" { segments.removeLast() }
        guard segments.count >= 5, segments[0] == "database" else {
            throw WireError(.badRequest, "expected a path /database/1/{container}/{development|production}/{public|private|shared}/{operation}")
        }
        guard segments[1] == "1" else { throw WireError(.badRequest, "protocol version \(segments[1]) is not supported; the version is 1") }
        let container = segments[2]
        guard !container.isEmpty, container.utf8.count <= 255,
              container.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0) }) else {
            throw WireError(.badRequest, "container \(container.debugDescription) is not a container identifier (letters, digits, '.', '_', '-')")
        }
        self.container = container
        guard let environment = CloudKitEnvironment(rawValue: segments[3]) else {
            throw WireError(.badRequest, "environment \(segments[3].debugDescription) is not development or production")
        }
        self.environment = environment
        let rest = Array(segments.dropFirst(4))
        if let scope = CloudKitDatabaseScope(rawValue: rest[0]) {
            guard rest.count >= 2 else { throw WireError(.badRequest, "the path names no operation after the database") }
            self.scope = scope
            operation = rest.dropFirst().joined(separator: "/")
        } else if DatabasePath.databaseless.contains(rest.joined(separator: "/")) {
            scope = .public
            operation = rest.joined(separator: "/")
        } else {
            throw WireError(.badRequest, "database \(rest[0].debugDescription) is not public, private or shared")
        }
    }

    /// The path after the host, as signed by server-to-server clients.
    package var subpathPrefix: String { "/database/1/\(container)/\(environment.rawValue)" }
}
