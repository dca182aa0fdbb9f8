// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityWire
import UbiquityCore

@Suite struct WireModelTests {
    @Test func fieldRoundTrip() throws {
        let json = try JSONValue.parse(Array(#"{"value":[1,2,3],"type":"INT64_LIST"}"#.utf8).data)
        let value = try WireFieldValue(fieldJSON: json, path: "f")
        #expect(value == .list(element: .int64, [.int64(1), .int64(2), .int64(3)]))
    }
}

extension Array where Element == UInt8 {
    var data: Foundation.Data { Foundation.Data(self) }
}
