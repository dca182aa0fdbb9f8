// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire
import UbiquityCore

/// One of a container's three databases (`CKDatabase`): public, private or shared. Run
/// operations with ``add(_:)`` (or their own `run()`), or use the async convenience methods
/// (``save(_:)-(Record)``, ``record(for:)``, ``records(matching:inZoneWith:desiredKeys:resultsLimit:)``,
/// ``recordZoneChanges(inZoneWith:since:desiredKeys:resultsLimit:)``, …), which run one request
/// (or one request per zone and per 200 items) and return the results.
public final class CloudDatabase: Sendable, CustomStringConvertible {
    /// The database scopes (`CKDatabase.Scope`).
    public typealias Scope = CloudKitDatabaseScope

    /// The container the database belongs to.
    public let container: CloudContainer
    /// Which database this is.
    public let databaseScope: Scope

    /// Which database this is (``databaseScope``).
    public var scope: Scope { databaseScope }

    init(container: CloudContainer, scope: Scope) {
        self.container = container
        databaseScope = scope
    }

    /// Runs `operation` on this database in a new task (`add(_:)`). Its blocks report the
    /// results; ``CloudDatabaseOperation/waitUntilFinished()`` waits for it.
    public func add(_ operation: CloudDatabaseOperation) {
        operation.database = self
        operation.startDetached()
    }

    /// `CloudDatabase(private of iCloud.com.example)`.
    public var description: String { "CloudDatabase(\(databaseScope.rawValue) of \(container.containerIdentifier))" }

    func send(_ subpath: String, method: String = "POST", body: JSONValue?) async throws -> JSONValue {
        try await container.send(databaseScope, subpath, method: method, body: body)
    }
}
