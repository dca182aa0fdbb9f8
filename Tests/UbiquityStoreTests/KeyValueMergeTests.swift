// SPDX-License-Identifier: Apache-2.0
import Testing
import UbiquityStore

/// `KeyValueMerge` without I/O: every case of a server entry meeting the local row.
@Suite struct KeyValueMergeTests {
    typealias Entry = KeyValueDatabase.Entry
    typealias Server = KeyValueDatabase.ServerEntry

    static func local(_ value: String?, _ modified: Int64, dirty: Bool) -> Entry {
        Entry(key: "k", encodedValue: value, modified: modified, dirty: dirty)
    }

    static func clean(_ value: String?, _ modified: Int64) -> Entry { local(value, modified, dirty: false) }

    @Test func newKeysAndRemovals() {
        #expect(KeyValueMerge.decide(local: nil, server: Server(key: "k", encodedValue: "a", modified: 5))
                == .write(Self.clean("a", 5), visible: true))
        // A removal of a key this device never had: nothing to do.
        #expect(KeyValueMerge.decide(local: nil, server: Server(key: "k", encodedValue: nil, modified: 5)) == .keep)
        #expect(KeyValueMerge.decide(local: Self.clean("a", 5), server: Server(key: "k", encodedValue: nil, modified: 6))
                == .write(Self.clean(nil, 6), visible: true))
    }

    @Test func lastWriterWins() {
        // The server's newer value replaces a clean one and an older local change.
        #expect(KeyValueMerge.decide(local: Self.clean("a", 5), server: Server(key: "k", encodedValue: "b", modified: 6))
                == .write(Self.clean("b", 6), visible: true))
        #expect(KeyValueMerge.decide(local: Self.local("mine", 5, dirty: true), server: Server(key: "k", encodedValue: "b", modified: 6))
                == .write(Self.clean("b", 6), visible: true))
        // A newer local change not uploaded yet is kept.
        #expect(KeyValueMerge.decide(local: Self.local("mine", 7, dirty: true), server: Server(key: "k", encodedValue: "b", modified: 6)) == .keep)
        // A clean local row always follows the server (the server decided), even with an older timestamp.
        #expect(KeyValueMerge.decide(local: Self.clean("a", 9), server: Server(key: "k", encodedValue: "b", modified: 6))
                == .write(Self.clean("b", 6), visible: true))
        // Equal timestamps, different values: the server's (it decided).
        #expect(KeyValueMerge.decide(local: Self.local("mine", 6, dirty: true), server: Server(key: "k", encodedValue: "b", modified: 6))
                == .write(Self.clean("b", 6), visible: true))
    }

    @Test func theSameVersionOnlyCleans() {
        #expect(KeyValueMerge.decide(local: Self.local("a", 5, dirty: true), server: Server(key: "k", encodedValue: "a", modified: 5))
                == .write(Self.clean("a", 5), visible: false))
        #expect(KeyValueMerge.decide(local: Self.clean("a", 5), server: Server(key: "k", encodedValue: "a", modified: 5)) == .keep)
        // The same value with a newer timestamp is written, but nobody sees a change.
        #expect(KeyValueMerge.decide(local: Self.clean("a", 5), server: Server(key: "k", encodedValue: "a", modified: 8))
                == .write(Self.clean("a", 8), visible: false))
    }

    @Test func deletedOutrightOnTheServer() {
        #expect(KeyValueMerge.decide(local: Self.clean("a", 5), server: Server(key: "k", encodedValue: nil, modified: nil))
                == .write(Self.clean(nil, 5), visible: true))
        #expect(KeyValueMerge.decide(local: Self.local("a", 5, dirty: true), server: Server(key: "k", encodedValue: nil, modified: nil)) == .keep)
        #expect(KeyValueMerge.decide(local: nil, server: Server(key: "k", encodedValue: nil, modified: nil)) == .keep)
    }
}
