// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Sizes as people type them on command lines: bytes, or a number (a fraction allowed) with a
/// unit K, M, G or T (powers of 1024), optionally followed by `B` or `iB`, spaces allowed before
/// the unit: `4096`, `500M`, `1.5G`, `5GiB`, `100 MB`.
public enum ByteSize {
    /// The number of bytes `text` says, or nil when it is not a size (negative, not finite, too
    /// large for `Int64`, or not a number).
    public static func parse(_ text: String) -> Int64? {
        var body = text.trimmingCharacters(in: .whitespaces).uppercased()
        for suffix in ["IB", "B"] where body.hasSuffix(suffix) && body.count > suffix.count {
            body.removeLast(suffix.count)
            break
        }
        body = body.trimmingCharacters(in: .whitespaces)
        var power = 0
        if let last = body.last, let value = ["K": 1, "M": 2, "G": 3, "T": 4][String(last)] {
            power = value
            body.removeLast()
            body = body.trimmingCharacters(in: .whitespaces)
        }
        if let whole = Int64(body) {
            guard whole >= 0, whole <= (Int64.max >> (10 * power)) else { return nil }
            return whole << (10 * power)
        }
        let multiplier = pow(1024, Double(power))
        guard body.first.map({ $0.isNumber || $0 == "." }) == true, let value = Double(body), value.isFinite, value >= 0,
              value * multiplier < Double(Int64.max) else { return nil }
        return Int64(value * multiplier)
    }
}
