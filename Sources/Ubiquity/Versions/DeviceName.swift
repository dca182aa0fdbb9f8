// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// The name this device records as the saving computer of the versions it adds.
enum DeviceName {
    /// `UBIQUITY_DEVICE_NAME` when set and not empty, else the host name, else `"localhost"`.
    static var current: String {
        if let name = ProcessInfo.processInfo.environment["UBIQUITY_DEVICE_NAME"], !name.isEmpty { return name }
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? "localhost" : name
    }
}
