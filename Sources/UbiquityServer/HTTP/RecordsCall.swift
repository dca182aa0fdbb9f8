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
    /// The request body as received (verified by a server-to-server signature when signed).
    var body: [UInt8]
    /// Where the caller signs in (AUTHENTICATION_REQUIRED answers carry it).
    var signInURL: String
    /// The server's public base URL (`https://host:port`).
    var baseURL: String

    /// The body's JSON (`{}` for an empty body); a malformed one is BAD_REQUEST.
    func json() throws -> JSONValue {
        if body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return .object([:]) }
        do {
            return try JSONValue.parse(Data(body))
        } catch {
            throw WireError.badRequest(error)
        }
    }

    /// The body's JSON read with `WireReader`, for the operations whose fields it reads.
    func reader() throws -> WireReader {
        try WireReader(json(), path: "")
    }
}
