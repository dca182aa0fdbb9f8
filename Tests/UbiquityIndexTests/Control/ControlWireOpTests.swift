// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
import UbiquityIndex

/// The control socket's ops are typed (issue 25, typed edges): each travels as its raw value, and
/// an op this build does not know is refused with the known ones named.
@Suite struct ControlWireOpTests {
    @Test func opsTravelAsTheirRawValues() throws {
        for op in ControlWire.Op.allCases {
            let line = try ControlWire.encode(ControlWire.Request(op: op, path: "/x"))
            #expect(String(decoding: line, as: UTF8.self).contains(#""op":"\#(op.rawValue)""#))
            #expect(try ControlWire.decode(ControlWire.Request.self, from: line).op == op)
        }
        #expect(ControlWire.Op.confirmDeletes.rawValue == "confirm-deletes")
        #expect("\(ControlWire.Op.confirmDeletes)" == "confirm-deletes")
    }

    @Test func anUnknownOpIsRefusedNamingTheKnownOnes() {
        do {
            _ = try ControlWire.decode(ControlWire.Request.self, from: Array(#"{"op":"reboot"}"#.utf8))
            Issue.record("an unknown op decoded")
        } catch {
            #expect("\(error)".contains("unknown op 'reboot'"), "\(error)")
            #expect("\(error)".contains("confirm-deletes"), "\(error)")
        }
    }
}
