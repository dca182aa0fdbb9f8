// SPDX-License-Identifier: Apache-2.0
import HTTPTypes
import Hummingbird
import NIOCore
import UbiquityWire

/// CloudKit's error answer: the error dictionary as the body, its code's HTTP status, and
/// `Retry-After` for THROTTLED and TRY_AGAIN_LATER. ``RecordsAuthMiddleware`` adds the request
/// ID (in the body's `uuid` and the headers) to every answer of the `/database/1/…` routes.
extension WireError: HTTPResponseError {
    /// The HTTP status of the error's code (400, 401, 421, 503, …).
    package var status: HTTPResponse.Status { HTTPResponse.Status(code: code.httpStatus) }

    /// The JSON answer.
    package func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers: HTTPFields = [.contentType: "application/json; charset=UTF-8"]
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: json().serializedBytes())))
    }
}
