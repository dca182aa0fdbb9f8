// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// The least-recently-used eviction policy (`ubiq daemon --evict-budget SIZE`): pure, no I/O.
package enum EvictionPolicy {
    /// A downloaded file that may be evicted.
    package struct Candidate: Sendable, Hashable {
        /// The item's ID.
        package var id: String
        /// The path relative to the folder.
        package var path: String
        /// Bytes.
        package var size: Int64
        /// Last access (nanoseconds since 1970).
        package var lastUsed: Int64

        /// A candidate.
        package init(id: String, path: String, size: Int64, lastUsed: Int64) {
            self.id = id
            self.path = path
            self.size = size
            self.lastUsed = lastUsed
        }
    }

    /// The order to evict in: least recently used first; of two used at once, the larger first
    /// (fewer evictions), then by path.
    package static func order(_ candidates: [Candidate]) -> [Candidate] {
        candidates.sorted { ($0.lastUsed, -$0.size, $0.path) < ($1.lastUsed, -$1.size, $1.path) }
    }

    /// The files to evict so the total size is within `budget`, when each eviction succeeds.
    package static func victims(_ candidates: [Candidate], budget: Int64) -> [Candidate] {
        var total = candidates.reduce(Int64(0)) { $0 + $1.size }
        var victims: [Candidate] = []
        for candidate in order(candidates) where total > budget {
            victims.append(candidate)
            total -= candidate.size
        }
        return victims
    }

    /// Parses a size: bytes, or a number with a unit K, M, G or T (powers of 1024; `B`, `iB`
    /// accepted after it), e.g. `10G`, `500M`, `1.5G`, `4096`.
    /// - Throws: `invalidArgument` naming what was expected.
    package static func parseSize(_ text: String) throws -> Int64 {
        guard let bytes = ByteSize.parse(text) else {
            throw UbiquityError(.invalidArgument, "'\(text)': expected a size such as 10G, 500M or 4096 (bytes)")
        }
        return bytes
    }
}
