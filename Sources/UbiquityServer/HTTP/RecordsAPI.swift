// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import NIOCore
import UbiquityCore

/// The `/database/1/…` endpoints: parses the path, authenticates, decodes the JSON body
/// (whatever its content type), runs the engine and writes CloudKit's response shapes, headers
/// and error statuses.
struct RecordsAPI: Sendable {
    let engine: RecordsEngine
    let authenticator: RecordsAuthenticator
    let configuration: RecordsServerConfiguration
    let logger: Logger

    /// Operations this server answers (others get BAD_REQUEST naming them).
    static let operations: Set<String> = [
        "records/modify", "records/lookup", "records/query", "records/changes",
        "zones/list", "zones/lookup", "zones/modify", "zones/changes",
        "changes/database", "changes/zone", "users/current", "users/caller",
    ]

    func respond(to request: Request, context: some RequestContext) async -> Response {
        let requestID = UUID().uuidString.lowercased()
        let started = DispatchTime.now().uptimeNanoseconds
        var operation = "unknown"
        var rotated: String?
        let response: Response
        do {
            let rawPath = request.uri.path
            let path = try DatabasePath(rawPath: rawPath)
            operation = RecordsAPI.operations.contains(path.operation) ? path.operation : "unsupported"
            let buffer: ByteBuffer
            do {
                buffer = try await request.body.collect(upTo: configuration.maximumBodySize)
            } catch {
                throw WireError(.badRequest, "limit exceeded: the request body is larger than \(configuration.maximumBodySize) bytes")
            }
            let body = Array(buffer.readableBytesView)
            var query: [String: String] = [:]
            for (key, value) in request.uri.queryParameters { query[String(key)] = String(value) }
            let rawPathWithQuery = request.uri.query.map { "\(rawPath)?\($0)" } ?? rawPath
            let outcome = try await authenticator.authenticate(
                path: path, query: query, header: { name in HTTPField.Name(name).flatMap { request.headers[$0] } }, body: body,
                rawPath: rawPath, rawPathWithQuery: rawPathWithQuery, signInURL: signInURL(request: request, path: path, apiToken: query["ckAPIToken"]))
            rotated = outcome.rotatedToken
            let json: JSONValue
            do {
                json = body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) ? .object([:]) : try JSONValue.parse(Data(body))
            } catch {
                throw WireError.badRequest(error)
            }
            let context = RecordsEngine.Context(container: path.container, environment: path.environment, scope: path.scope, caller: outcome.caller)
            let result = try await dispatch(path: path, body: json, context: context, signInURL: signInURL(request: request, path: path, apiToken: query["ckAPIToken"]))
            response = RecordsAPI.json(result, status: .ok, requestID: requestID, rotatedToken: rotated)
        } catch var error as WireError {
            error.uuid = requestID
            response = RecordsAPI.json(error.json(), status: HTTPResponse.Status(code: error.code.httpStatus), requestID: requestID, rotatedToken: rotated)
        } catch let error as UbiquityError where error.code == .invalidArgument {
            var wire = WireError(.badRequest, error.message)
            wire.uuid = requestID
            response = RecordsAPI.json(wire.json(), status: .badRequest, requestID: requestID, rotatedToken: rotated)
        } catch {
            logger.error("request failed", metadata: ["operation": "\(operation)", "error": "\(error)", "request": "\(requestID)"])
            var wire = WireError(.internalError, "the server failed to handle the request; it was logged as \(requestID)")
            wire.uuid = requestID
            response = RecordsAPI.json(wire.json(), status: .internalServerError, requestID: requestID, rotatedToken: rotated)
        }
        let elapsed = DispatchTime.now().uptimeNanoseconds - started
        Timer(label: "ubiquity_records_request_duration", dimensions: [("operation", operation)]).recordNanoseconds(Int64(elapsed))
        Counter(label: "ubiquity_records_requests_total", dimensions: [("operation", operation), ("status", String(response.status.code))]).increment()
        return response
    }

    func signInURL(request: Request, path: DatabasePath, apiToken: String?) -> String {
        let base = configuration.publicURL ?? {
            let scheme = configuration.tlsCertificatePath == nil ? "http" : "https"
            let host = request.head.authority ?? "\(configuration.host):\(configuration.port)"
            return "\(scheme)://\(host)"
        }()
        var components = URLComponents()
        components.queryItems = [URLQueryItem(name: "container", value: path.container), URLQueryItem(name: "ckAPIToken", value: apiToken ?? "")]
        let query = (components.percentEncodedQuery ?? "").replacingOccurrences(of: "+", with: "%2B")
        return "\(base)/auth/signin?\(query)"
    }

    func dispatch(path: DatabasePath, body: JSONValue, context: RecordsEngine.Context, signInURL: String) async throws -> JSONValue {
        switch path.operation {
        case "records/modify":
            return try await engine.modifyRecords(WireModifyRecordsRequest(json: body), context: context)
        case "records/lookup":
            return try await engine.lookupRecords(WireLookupRecordsRequest(json: body), context: context)
        case "records/query":
            return try await engine.queryRecords(WireQueryRecordsRequest(json: body), context: context)
        case "records/changes":
            let request = try WireZoneChangesRequest(recordChangesJSON: body)
            let result = try await engine.zoneChanges(request, context: context)
            guard let zone = result.objectValue?["zones"]?.arrayValue?.first?.objectValue else { return result }
            if let error = WireError(json: .object(zone)) { throw error }
            var members = zone
            members["zoneID"] = nil
            members["reverse"] = .bool(false)
            return .object(members)
        case "zones/list":
            return try await engine.listZones(context: context)
        case "zones/lookup":
            return try await engine.lookupZones(WireReader(body, path: "").zoneIDs("zones"), context: context)
        case "zones/modify":
            let reader = try WireReader(body, path: "")
            let operations = try reader.requiredArray("operations").enumerated().map { try WireZoneOperation(json: $1, path: "operations[\($0)]") }
            return try await engine.modifyZones(operations, context: context)
        case "zones/changes":
            let reader = try WireReader(body, path: "")
            return try await engine.databaseChanges(syncToken: reader.string("metaSyncToken"),
                                                    resultsLimit: reader.integer("resultsLimit").map { try WireReader.limit($0, path: "resultsLimit") },
                                                    tokenKey: "metaSyncToken", context: context)
        case "changes/database":
            let reader = try WireReader(body, path: "")
            return try await engine.databaseChanges(syncToken: reader.string("syncToken"),
                                                    resultsLimit: reader.integer("resultsLimit").map { try WireReader.limit($0, path: "resultsLimit") },
                                                    context: context)
        case "changes/zone":
            return try await engine.zoneChanges(WireZoneChangesRequest(json: body), context: context)
        case "users/current":
            guard let name = context.caller.userRecordName else {
                var error = WireError(.authenticationRequired, "request needs authorization")
                error.redirectURL = signInURL
                throw error
            }
            return .object(["userRecordName": .string(name), "firstName": .null, "lastName": .null])
        case "users/caller":
            guard let name = context.caller.userRecordName else {
                var error = WireError(.authenticationRequired, "request needs authorization")
                error.redirectURL = signInURL
                throw error
            }
            return .object(["users": .array([.object(["userRecordName": .string(name)])])])
        default:
            throw WireError(.badRequest, "operation \(path.operation) is not available on this server")
        }
    }

    /// A JSON response with CloudKit's headers.
    static func json(_ value: JSONValue, status: HTTPResponse.Status, requestID: String, rotatedToken: String?) -> Response {
        var headers: HTTPFields = [
            .contentType: "application/json; charset=UTF-8",
            HTTPField.Name(CloudKitAuthHeaders.cloudKitVersion)!: "1.0",
            HTTPField.Name(CloudKitAuthHeaders.requestUUID)!: requestID,
        ]
        if let rotatedToken { headers[HTTPField.Name(CloudKitAuthHeaders.webAuthToken)!] = rotatedToken }
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: value.serialized())))
    }
}
