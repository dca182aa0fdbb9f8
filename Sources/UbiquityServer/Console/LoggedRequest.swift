// SPDX-License-Identifier: Apache-2.0
import UbiquityCore
import UbiquityWire

/// One `/database/1/…` request as the developer Console's request log shows it.
package struct LoggedRequest: Sendable, Hashable {
    /// The log's order: larger is later (server-wide, from 1).
    package var sequence: Int64
    /// When it was answered (milliseconds since 1970).
    package var time: Int64
    /// The request's ID (`X-Apple-Request-UUID`, also in the server's own log).
    package var requestID: String
    /// The container, environment and database the path named.
    package var container: String
    package var environment: CloudKitEnvironment
    package var scope: CloudKitDatabaseScope
    /// The operation; nil for a path that names none the server knows.
    package var operation: RecordsOperation?
    /// The HTTP status of the answer.
    package var status: Int
    /// From the request's head to its answer.
    package var nanoseconds: Int64
    /// CloudKit's `serverErrorCode` when the request failed as a whole.
    package var errorCode: WireServerErrorCode?

    /// Makes an entry (the log gives it its sequence).
    package init(sequence: Int64 = 0, time: Int64, requestID: String, container: String, environment: CloudKitEnvironment,
                 scope: CloudKitDatabaseScope, operation: RecordsOperation?, status: Int, nanoseconds: Int64, errorCode: WireServerErrorCode?) {
        self.sequence = sequence
        self.time = time
        self.requestID = requestID
        self.container = container
        self.environment = environment
        self.scope = scope
        self.operation = operation
        self.status = status
        self.nanoseconds = nanoseconds
        self.errorCode = errorCode
    }

    /// Whether the request failed (an HTTP status of 400 or more).
    package var failed: Bool { status >= 400 }

    /// The operation as the log and telemetry name it.
    package var operationName: String { operation?.rawValue ?? "unsupported" }
}
