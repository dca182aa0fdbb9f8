// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Byte encodings shared by the auth primitives: hex, base64url, lenient base64 and a
/// constant-time comparison.
enum AuthEncoding {
    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Lowercase hex of `bytes`.
    static func hex<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(hexDigits[Int(byte >> 4)])
            out.append(hexDigits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of a hex string (either case), or nil when it is not an even run of hex digits.
    static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

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
