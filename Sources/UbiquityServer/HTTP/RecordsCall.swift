// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire

/// An authenticated call of a `/database/1/…` operation, as ``RecordsAuthMiddleware`` puts it
/// in the request context for the operation's route.
struct RecordsCall: Sendable {
    /// The parsed path: container, environment, database, operation.
    var path: DatabasePath
    /// Who calls, and the database they call.
    var context: RecordsEngine.Context
    /// The server's public base URL (`https://host:port`).
    var baseURL: String
}
