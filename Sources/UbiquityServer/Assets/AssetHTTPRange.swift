// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The byte-range headers of the asset routes.
enum AssetHTTPRange {
    /// What a download's `Range` header asks for.
    enum Request: Equatable {
        /// The whole content (no header, one the server ignores, or several ranges).
        case full
        /// One satisfiable range.
        case partial(Range<Int64>)
        /// A range past the end: 416.
        case unsatisfiable
    }

    /// Reads `Range: bytes=a-b | a- | -n` against content of `size` bytes (RFC 9110 §14.2):
    /// malformed headers and multiple ranges are ignored (the whole content is served).
    static func parseRange(_ header: String?, size: Int64) -> Request {
        guard let header else { return .full }
        let text = header.trimmingCharacters(in: .whitespaces)
        guard text.lowercased().hasPrefix("bytes="), !text.contains(",") else { return .full }
        let spec = text.dropFirst(6).trimmingCharacters(in: .whitespaces)
        guard let dash = spec.firstIndex(of: "-") else { return .full }
        let first = spec[spec.startIndex..<dash].trimmingCharacters(in: .whitespaces)
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        if first.isEmpty {
            guard let suffix = Int64(last), suffix >= 0 else { return .full }
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .partial(max(0, size - suffix)..<size)
        }
        guard let start = Int64(first), start >= 0 else { return .full }
        var end = size - 1
        if !last.isEmpty {
            guard let value = Int64(last), value >= start else { return .full }
            end = min(value, size - 1)
        }
        guard start < size else { return .unsatisfiable }
        return .partial(start..<end + 1)
    }

    /// An upload's `Content-Range: bytes a-b/TOTAL` (or `bytes */TOTAL` with no bytes).
    struct Upload: Equatable {
        /// The first byte's offset and the number of bytes, when the body carries bytes.
        var range: Range<Int64>?
        /// The whole upload's size.
        var total: Int64
    }

    /// Reads a `Content-Range` header; nil when it is malformed.
    static func parseContentRange(_ header: String) -> Upload? {
        let text = header.trimmingCharacters(in: .whitespaces)
        guard text.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = text.dropFirst(6).trimmingCharacters(in: .whitespaces)
        let parts = spec.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let total = Int64(parts[1]), total >= 0 else { return nil }
        if parts[0] == "*" { return Upload(range: nil, total: total) }
        let bounds = parts[0].split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let start = Int64(bounds[0]), let end = Int64(bounds[1]), start >= 0, end >= start, end < total else {
            return nil
        }
        return Upload(range: start..<end + 1, total: total)
    }
}
