// SPDX-License-Identifier: Apache-2.0

/// Escaping for values interpolated into the sign-in pages and callback URLs.
enum WebEscaping {
    /// `text` escaped for HTML text and for double- or single-quoted attribute values.
    static func html(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            case "\u{0}": out += "\u{FFFD}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// `text` as a double-quoted JavaScript string literal that is also safe inside an HTML
    /// `<script>` element: quotes, backslashes, `<`, `>`, `&`, `/`, control characters and the
    /// line separators U+2028/U+2029 are written as escapes, so the value can neither end the
    /// string nor the script element.
    static func javaScriptString(_ text: String) -> String {
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "/": out += "\\/"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "'", "<", ">", "&", "`", "\u{2028}", "\u{2029}":
                out += unicodeEscape(scalar.value)
            default:
                if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) {
                    out += unicodeEscape(scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
        return out
    }

    private static func unicodeEscape(_ value: UInt32) -> String {
        let hex = String(value, radix: 16, uppercase: true)
        return "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }

    /// `text` percent-encoded for a query-string value: everything but RFC 3986's unreserved
    /// characters (`A–Z a–z 0–9 - . _ ~`) is encoded, so `+`, `/` and `=` become `%2B`, `%2F`, `%3D`.
    static func percentEncodeQueryValue(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isUnreserved(byte) {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += percent(byte)
            }
        }
        return out
    }

    /// Percent-encodes the bytes of a URL that are not printable ASCII or could end an attribute
    /// or a header (`"`, `'`, `<`, `>`, `\`, `` ` ``, space, controls, non-ASCII); `%` escapes
    /// already present are kept.
    static func sanitizeURL(_ url: String) -> String {
        var out = ""
        out.reserveCapacity(url.utf8.count)
        for byte in url.utf8 {
            switch byte {
            case 0x21...0x7E where !"\"'<>\\`".utf8.contains(byte):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += percent(byte)
            }
        }
        return out
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
             UInt8(ascii: "~"):
            true
        default:
            false
        }
    }

    private static func percent(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF".unicodeScalars)
        return "%" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0x0F)])
    }
}
