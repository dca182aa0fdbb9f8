// SPDX-License-Identifier: Apache-2.0
import Foundation
import Ubiquity
import UbiquityCloudKit

/// How far this machine's clock is from a server's, from the `Date` header of its `/healthz`
/// (one-second resolution, compared with the middle of the request).
package enum ServerClock {
    /// Seconds this clock is ahead of the server's (negative: behind), or nil when the server
    /// cannot be reached, sent no `Date`, or answered three times slower than
    /// ``maximumRoundTrip`` (a busy machine: the measurement would be off by half the round
    /// trip, enough to record an offset that is not there).
    package static func skew(serverURL: URL, transport: HTTPClientTransport = HTTPClientTransport()) async -> Double? {
        let prefix = serverURL.path.hasSuffix("/") ? String(serverURL.path.dropLast()) : serverURL.path
        for _ in 0..<3 {
            let before = Date()
            guard let response = try? await transport.send(CloudKitHTTPRequest(serverURL: serverURL, method: "GET", path: prefix + "/healthz"))
            else { return nil }
            let after = Date()
            if after.timeIntervalSince(before) <= maximumRoundTrip { return skew(dateHeader: response.header("Date"), before: before, after: after) }
        }
        return nil
    }

    /// The longest round trip a measurement is taken from, in seconds.
    package static let maximumRoundTrip: TimeInterval = 0.5

    /// Seconds this clock is ahead of the server whose response carried `dateHeader`, for a
    /// request sent at `before` and answered at `after`; nil without a readable header.
    package static func skew(dateHeader: String?, before: Date, after: Date) -> Double? {
        guard let dateHeader, let date = httpDate.date(from: dateHeader) else { return nil }
        return before.addingTimeInterval(after.timeIntervalSince(before) / 2).timeIntervalSince(date)
    }

    /// RFC 7231 dates (`Wed, 25 Nov 2026 13:40:00 GMT`).
    static let httpDate: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter
    }()
}
