// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Foundation
import NIOCore

extension AssetTransfer {
    /// The bytes of `range` of an asset's content, fetched with one `Range` request (retried
    /// as downloads are): for a reader that needs bytes far ahead of a download in progress.
    /// The bytes are the server's as sent; unlike ``download(from:to:expectedChecksum:progress:)``
    /// nothing checks them against the asset's checksum.
    /// - Parameters:
    ///   - range: the bytes wanted (ending past the content: up to its end).
    ///   - downloadURL: the asset's `downloadURL` (`${f}` is replaced by `name`).
    ///   - name: the file's name, for the URL.
    /// - Throws: ``CloudKitError``: the server's error, `networkFailure` when the connection
    ///   kept failing, `serverRejectedRequest` when the server does not answer ranges.
    public func bytes(in range: Range<Int64>, from downloadURL: String, name: String) async throws -> Data {
        guard let url = URL(string: downloadURL.replacingOccurrences(of: "${f}", with: CloudKitHTTPRequest.percentEncode(name))) else {
            throw CloudKitError(.invalidArguments, "\(downloadURL) is not a URL")
        }
        guard !range.isEmpty else { return Data() }
        let components = options.requestTimeout.components
        let timeout = TimeAmount.nanoseconds(components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000)
        var failures = 0
        while true {
            var request = HTTPClientRequest(url: url.absoluteString)
            request.method = .GET
            request.headers.add(name: "Range", value: "bytes=\(range.lowerBound)-\(range.upperBound - 1)")
            do {
                let response: HTTPClientResponse
                do {
                    response = try await client.execute(request, timeout: timeout)
                } catch is CancellationError {
                    throw CloudKitError(.operationCancelled, "the asset transfer was cancelled")
                } catch {
                    throw HTTPClientTransport.classify(error, url: url)
                }
                let status = Int(response.status.code)
                if status == 416 { return Data() }  // wholly past the end
                guard status == 206 else {
                    let body = (try? await response.body.collect(upTo: 1 << 20)).map { Data($0.readableBytesView) } ?? Data()
                    guard status != 200 else {
                        throw CloudKitError(.serverRejectedRequest, "the server answered a range of \(url.absoluteString) with the whole content")
                    }
                    var headers: [String: String] = [:]
                    for header in response.headers { headers[header.name.lowercased()] = header.value }
                    throw Self.error(for: Reply(status: status, headers: headers, body: body))
                }
                do {
                    let body = try await response.body.collect(upTo: range.count + 1)
                    return Data(body.readableBytesView.prefix(range.count))
                } catch let error as CloudKitError {
                    throw error
                } catch {
                    throw HTTPClientTransport.classify(error, url: url)
                }
            } catch let error where Self.isRetryable(error) {
                failures += 1
                guard failures < options.maximumAttempts else { throw error }
                try await pause(before: failures)
            }
        }
    }
}
