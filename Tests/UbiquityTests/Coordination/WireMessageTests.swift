// SPDX-License-Identifier: Apache-2.0
import Testing
@testable import Ubiquity

struct WireMessageTests {
    @Test("every message survives encoding, including tabs, newlines and backslashes in paths")
    func roundTrip() throws {
        let odd = "/tmp/a\tb\nc\\d é"
        let messages: [WireMessage] = [
            .hello(pid: 42),
            .addPresenter(id: 7, purpose: "p", path: odd),
            .addPresenter(id: 8, purpose: "p", path: nil),
            .updatePresenter(id: 7, path: "/x"),
            .claim(id: 9, purpose: "q", isPrepare: false, timeoutMilliseconds: 1500, items: [
                ItemRequest(path: odd, access: .read([.withoutChanges])),
                ItemRequest(path: "/y", access: .write([.forMoving])),
            ]),
            .cancel(id: 9), .finish(id: 9),
            .didMove(from: odd, to: "/z", purpose: "q"),
            .reply(messageID: 3, error: nil),
            .reply(messageID: 4, error: UbiquityErrorWire(UbiquityError(.presenterFailed, "no\tway"))),
            .version(.gained, path: odd, versionID: "v1"),
            .attributes(path: "/a", keys: ["k1", "k2"]),
            .presenterAdded(id: 7), .granted(id: 9),
            .failed(id: 9, error: UbiquityErrorWire(UbiquityError(.timedOut, "slow"))),
            .message(messageID: 5, presenterID: 7, .relinquishToWriter(token: 11)),
            .message(messageID: 0, presenterID: 7, .subitemDidMove(from: odd, to: "/q")),
            .message(messageID: 0, presenterID: 7, .versionEvent(.resolved, itemPath: odd, versionID: "v2", subitem: true)),
            .message(messageID: 6, presenterID: 7, .accommodateSubitemDeletion(path: odd)),
        ]
        for message in messages {
            let line = message.encoded()
            #expect(!line.contains(10))
            #expect(try WireMessage(decoding: line) == message)
        }
    }

    @Test("malformed lines are protocol errors, not crashes")
    func malformed() {
        for line in ["", "claim\t1", "claim\t1\tp\t0\t10\t1\trelative\tr\t0", "msg\t1\t2\tnope", "bogus"] {
            #expect(throws: UbiquityError.self) { try WireMessage(decoding: Array(line.utf8)) }
        }
    }
}
