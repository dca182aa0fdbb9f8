// SPDX-License-Identifier: Apache-2.0
import HTTPTypes
import Hummingbird
import Metrics
import NIOCore
import Synchronization
import UbiquityCore
import UbiquityWire

/// The server-wide limit on request bodies held in memory at once (issue 24, finding 4).
///
/// Every route that collects a body (the `/database/` API, the asset JSON and chunk routes, the
/// sign-in routes) collects it through ``collect(_:upTo:declaredLength:tooLarge:_:)``: the bytes
/// are counted while the request is handled, a body announced with `Content-Length` is counted
/// before any of it is read, and a body that would take the total over the limit is refused with
/// HTTP 503 `TRY_AGAIN_LATER` (`retryAfter` 1) instead of being read. Each route's own size cap
/// stays; streamed uploads (`assets/1/upload`) are written as they arrive and never counted.
package final class RequestBodyBudget: Sendable {
    /// The most bytes of collected bodies held at once; 0: unlimited.
    package let limit: Int
    private let inFlight = Atomic<Int>(0)

    /// A budget of `limit` bytes (0: unlimited).
    package init(limit: Int) {
        self.limit = max(0, limit)
    }

    /// The bytes counted now.
    package var bytesInFlight: Int { inFlight.load(ordering: .relaxed) }

    /// Counts `bytes` when they fit; false (nothing counted) when they would exceed the limit.
    package func reserve(_ bytes: Int) -> Bool {
        guard bytes > 0 else { return true }
        guard limit > 0 else {
            inFlight.add(bytes, ordering: .relaxed)
            return true
        }
        var current = inFlight.load(ordering: .relaxed)
        while true {
            guard current + bytes <= limit else { return false }
            let (exchanged, original) = inFlight.compareExchange(expected: current, desired: current + bytes, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    /// Stops counting `bytes` reserved before.
    package func release(_ bytes: Int) {
        guard bytes > 0 else { return }
        inFlight.subtract(bytes, ordering: .relaxed)
    }

    /// Collects `body` (at most `maximum` bytes, else `tooLarge()` is thrown) within the budget
    /// and runs `use` with it; the bytes count until `use` returns. `declaredLength` (the
    /// request's `Content-Length`) is counted before reading; a body without one is counted as
    /// it arrives. Over the budget: ``Exhausted``, with nothing more read.
    package func collect<Result>(_ body: RequestBody, upTo maximum: Int, declaredLength: Int?, tooLarge: () -> any Error,
                                 _ use: (ByteBuffer) async throws -> Result) async throws -> Result {
        if let declaredLength, declaredLength > maximum { throw tooLarge() }
        var reserved = 0
        do {
            if let declaredLength {
                guard reserve(declaredLength) else { throw exhausted() }
                reserved = declaredLength
            }
            var collected = ByteBuffer()
            var pieces = body.makeAsyncIterator()
            while true {
                let next: ByteBuffer?
                do {
                    next = try await pieces.next()
                } catch {
                    throw BrokenBody(received: collected.readableBytes, underlying: error)
                }
                guard var piece = next else { break }
                let size = collected.readableBytes + piece.readableBytes
                if size > maximum { throw tooLarge() }
                if size > reserved {
                    guard reserve(size - reserved) else { throw exhausted() }
                    reserved = size
                }
                collected.writeBuffer(&piece)
            }
            let result = try await use(collected)
            release(reserved)
            return result
        } catch {
            release(reserved)
            throw error
        }
    }

    /// Collects a request's body as ``collect(_:upTo:declaredLength:tooLarge:_:)`` does, with
    /// its `Content-Length`.
    package func collect<Result>(_ request: Request, upTo maximum: Int, tooLarge: () -> any Error,
                                 _ use: (ByteBuffer) async throws -> Result) async throws -> Result {
        try await collect(request.body, upTo: maximum, declaredLength: request.headers[.contentLength].flatMap { Int($0) },
                          tooLarge: tooLarge, use)
    }

    private func exhausted() -> Exhausted {
        Counter(label: "ubiquity_request_body_budget_refusals_total").increment()
        return Exhausted(limit: limit)
    }

    /// The body broke off (the client went away or the connection failed): HTTP 400
    /// `BAD_REQUEST`, as the error is not the server's.
    package struct BrokenBody: HTTPResponseError {
        /// The bytes received before it broke.
        package let received: Int
        /// What the connection reported.
        package let underlying: any Error

        /// The CloudKit error.
        package var wire: WireError { WireError(.badRequest, "the request body broke off after \(received) bytes: \(underlying)") }

        /// 400.
        package var status: HTTPResponse.Status { .badRequest }

        /// The response: the error dictionary.
        package func response(from request: Request, context: some RequestContext) throws -> Response {
            Response(status: status, headers: [.contentType: "application/json; charset=UTF-8"],
                     body: ResponseBody(byteBuffer: ByteBuffer(bytes: wire.json().serializedBytes())))
        }
    }

    /// The refusal: HTTP 503 `TRY_AGAIN_LATER` with `retryAfter` 1 and `Retry-After: 1`, in
    /// CloudKit's error shape.
    package struct Exhausted: HTTPResponseError {
        /// The budget's limit, in bytes.
        package let limit: Int

        /// The CloudKit error.
        package var wire: WireError {
            WireError(.tryAgainLater, "the server is receiving too many request bodies at once (\(limit) bytes, its limit); try again in 1 s",
                      retryAfter: 1)
        }

        /// 503.
        package var status: HTTPResponse.Status { .serviceUnavailable }

        /// The response: the error dictionary, with `Retry-After: 1`.
        package func response(from request: Request, context: some RequestContext) throws -> Response {
            Response(status: status, headers: [.contentType: "application/json; charset=UTF-8", .retryAfter: "1"],
                     body: ResponseBody(byteBuffer: ByteBuffer(bytes: wire.json().serializedBytes())))
        }
    }
}
