// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Byte encodings shared by the auth primitives: base64url, lenient base64 and a constant-time
/// comparison (hex is `Hex`, in UbiquityCore).
enum AuthEncoding {
    /// Standard base64 without `=` padding (the PHC string format's encoding).
    static func base64Unpadded<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var text = Data(bytes).base64EncodedString()
        while text.last == "=" { text.removeLast() }
        return text
    }

    /// Decodes base64 in either alphabet (standard or URL-safe), with or without padding, ignoring
    /// surrounding whitespace. Nil when the text is not base64.
    static func decodeBase64(lenient text: String) -> [UInt8]? {
        var chars: [UInt8] = []
        chars.reserveCapacity(text.utf8.count + 3)
        for char in text.utf8 {
            switch char {
            case UInt8(ascii: "-"): chars.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): chars.append(UInt8(ascii: "/"))
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: "\n"): continue
            default: chars.append(char)
            }
        }
        // Padding is optional, but if present it must be at the end and at most two characters.
        var padding = 0
        while chars.last == UInt8(ascii: "=") {
            chars.removeLast()
            padding += 1
        }
        guard padding <= 2, !chars.isEmpty, chars.count % 4 != 1 else { return nil }
        while chars.count % 4 != 0 { chars.append(UInt8(ascii: "=")) }
        guard let data = Data(base64Encoded: Data(chars)) else { return nil }
        return Array(data)
    }

    /// Whether `a` and `b` hold the same bytes, in time that depends only on their lengths.
    static func constantTimeEquals<A: Collection, B: Collection>(_ a: A, _ b: B) -> Bool
    where A.Element == UInt8, B.Element == UInt8 {
        var difference: UInt8 = a.count == b.count ? 0 : 1
        var left = a.makeIterator()
        var right = b.makeIterator()
        for _ in 0..<max(a.count, b.count) {
            difference |= (left.next() ?? 0) ^ (right.next() ?? 0)
        }
        return difference == 0
    }

    /// `count` bytes from the system's cryptographically secure generator (`getrandom` on Linux).
    static func randomBytes(count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var out: [UInt8] = []
        out.reserveCapacity(count + 7)
        while out.count < count {
            let word = generator.next() as UInt64
            withUnsafeBytes(of: word) { out.append(contentsOf: $0) }
        }
        out.removeLast(out.count - count)
        return out
    }
}
