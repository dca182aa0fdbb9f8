// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// How much each database may hold: its live records' stored JSON plus the distinct assets they
/// refer to (each counted once per database). nil is unlimited.
public struct StorageQuotas: Sendable, Hashable {
    /// Per user: each private database.
    public var privateBytes: Int64?
    /// Per container and environment: the public database.
    public var publicBytes: Int64?

    /// Makes quotas (unlimited by default).
    public init(privateBytes: Int64? = nil, publicBytes: Int64? = nil) {
        self.privateBytes = privateBytes
        self.publicBytes = publicBytes
    }

    /// The quota of a database.
    public func limit(for key: DatabaseKey) -> Int64? {
        key.scope == .public ? publicBytes : privateBytes
    }

    /// Reads a byte count with an optional K/M/G/T suffix (powers of 1024; `B`, `iB` accepted:
    /// `5G`, `5GiB`, `100 MB`).
    /// - Throws: `UbiquityError.invalidArgument` naming `argument` and what was expected.
    public static func parseBytes(_ text: String, argument: String) throws -> Int64 {
        var body = text.trimmingCharacters(in: .whitespaces).uppercased()
        for suffix in ["IB", "B"] where body.hasSuffix(suffix) && body.count > suffix.count {
            body.removeLast(suffix.count)
            break
        }
        body = body.trimmingCharacters(in: .whitespaces)
        let shifts: [Character: Int64] = ["K": 10, "M": 20, "G": 30, "T": 40]
        var shift: Int64 = 0
        if let last = body.last, let value = shifts[last] {
            shift = value
            body.removeLast()
            body = body.trimmingCharacters(in: .whitespaces)
        }
        guard let number = Int64(body), number >= 0, number <= (Int64.max >> shift) else {
            throw UbiquityError(.invalidArgument, "\(argument) \(text): expected a number of bytes, optionally with K, M, G or T (e.g. 5G)")
        }
        return number << shift
    }
}
