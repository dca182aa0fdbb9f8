// SPDX-License-Identifier: Apache-2.0
import Foundation

/// base64url (RFC 4648 §5) without padding: safe in URLs, query strings, cookies and file
/// names. The one implementation for tokens, signed asset URLs and sync tokens.
package enum Base64URL {
    /// The unpadded base64url of `bytes`.
    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var out = Array(Data(bytes).base64EncodedString().utf8)
        while out.last == UInt8(ascii: "=") { out.removeLast() }
        for index in out.indices {
            if out[index] == UInt8(ascii: "+") { out[index] = UInt8(ascii: "-") }
            else if out[index] == UInt8(ascii: "/") { out[index] = UInt8(ascii: "_") }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of unpadded base64url text; nil when it holds anything but the alphabet
    /// (`A-Z a-z 0-9 - _`) or cannot be base64.
    package static func decode(_ text: String) -> [UInt8]? {
        var chars: [UInt8] = []
        chars.reserveCapacity(text.utf8.count + 3)
        for char in text.utf8 {
            switch char {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): chars.append(char)
            case UInt8(ascii: "-"): chars.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): chars.append(UInt8(ascii: "/"))
            default: return nil
            }
        }
        guard chars.count % 4 != 1 else { return nil }
        while chars.count % 4 != 0 { chars.append(UInt8(ascii: "=")) }
        return Data(base64Encoded: Data(chars)).map(Array.init)
    }
}
