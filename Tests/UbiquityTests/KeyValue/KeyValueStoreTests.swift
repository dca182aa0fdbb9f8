// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Synchronization
import Testing
import Ubiquity
import UbiquityStore

/// `KeyValueStore` on real files: typed values, persistence, limits (a failed set keeps the
/// previous value and posts a quota-violation notification), dirty flags for the sync, and
/// change notifications between store instances (as between processes) with their reasons.
@Suite struct KeyValueStoreTests {
    static let container = "iCloud.org.example.KeyValue"

    /// A temporary state folder; every store made from it shares one file.
    final class Folder: Sendable {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ubq-kvs-\(UUID().uuidString.prefix(8))")
        var paths: UbiquityPaths {
            UbiquityPaths(environment: ["HOME": root.path, "XDG_STATE_HOME": root.appendingPathComponent("state").path])
        }

        func store(center: NotificationCenter = NotificationCenter()) throws -> KeyValueStore {
            var logger = Logger(label: "test.kvs")
            logger.logLevel = .critical  // the refused sets log errors on purpose
            return try KeyValueStore(containerIdentifier: KeyValueStoreTests.container, paths: paths, notificationCenter: center,
                                     pollInterval: .milliseconds(20), logger: logger)
        }

        deinit { try? FileManager.default.removeItem(at: root) }
    }

    static func next(_ recorder: ChangeRecorder) async -> KeyValueStore.Change? { await recorder.next() }

    @Test func typedValuesPersist() throws {
        let folder = Folder()
        let store = try folder.store()
        #expect(store.set("blue", forKey: "theme"))
        #expect(store.set(Data([1, 2, 3]), forKey: "blob"))
        #expect(store.set(Int64(1) << 40, forKey: "big"))
        #expect(store.set(42, forKey: "answer"))
        #expect(store.set(0.25, forKey: "volume"))
        #expect(store.set(true, forKey: "enabled"))
        #expect(store.set(["a", 1, 2.5, false] as [Any], forKey: "list"))
        #expect(store.set(["name": "Mei", "level": 13] as [String: Any], forKey: "player"))
        #expect(store.synchronize())

        let reopened = try folder.store()
        #expect(reopened.string(forKey: "theme") == "blue")
        #expect(reopened.data(forKey: "blob") == Data([1, 2, 3]))
        #expect(reopened.longLong(forKey: "big") == 1 << 40)
        #expect(reopened.longLong(forKey: "answer") == 42)
        #expect(reopened.double(forKey: "volume") == 0.25)
        #expect(reopened.bool(forKey: "enabled"))
        #expect(reopened.value(forKey: "list") == .array([.string("a"), .integer(1), .double(2.5), .bool(false)]))
        #expect(reopened.dictionary(forKey: "player")?["level"] as? Int == 13)
        #expect(reopened.object(forKey: "theme") as? String == "blue")
        #expect(reopened.string(forKey: "answer") == nil)  // another type
        #expect(reopened.longLong(forKey: "missing") == 0)
        #expect(reopened.dictionaryRepresentation.count == 8)

        reopened.removeObject(forKey: "theme")
        #expect(reopened.string(forKey: "theme") == nil)
        #expect(try folder.store().object(forKey: "theme") == nil)
        // Non-property-list values are refused and store nothing.
        #expect(!reopened.set(Date() as Any?, forKey: "when"))
        #expect(reopened.object(forKey: "when") == nil)
        #expect(throws: UbiquityError.self) { try reopened.setValue(.double(.nan), forKey: "nan") }
    }

    @Test func encodedFormIsTypedJSON() throws {
        #expect(try KeyValueStore.Value.string("x").encoded() == #"{"string":"x"}"#)
        #expect(try KeyValueStore.Value.integer(7).encoded() == #"{"integer":7}"#)
        #expect(try KeyValueStore.Value.data(Data("hi".utf8)).encoded() == #"{"data":"aGk="}"#)
        let nested = KeyValueStore.Value.dictionary(["b": .bool(true), "a": .array([.double(1.5)])])
        #expect(KeyValueStore.Value.decoded(try nested.encoded()) == nested)
        #expect(KeyValueStore.Value.decoded("not json") == nil)
    }

    @Test func keysLongerThan64BytesAreRefused() throws {
        let folder = Folder()
        let store = try folder.store()
        let key64 = String(repeating: "é", count: 32)
        #expect(store.set("ok", forKey: key64))
        let key66 = String(repeating: "é", count: 33)
        #expect(!store.set("no", forKey: key66))
        #expect {
            try store.setValue(.string("no"), forKey: key66)
        } throws: { error in
            (error as? UbiquityError)?.code == .invalidArgument && "\(error)".contains("64")
        }
        #expect(!store.set("no", forKey: ""))
        #expect(store.values.keys.sorted() == [key64])
    }

    @Test func overTheQuotaASetFailsKeepsThePreviousValueAndNotifies() async throws {
        let folder = Folder()
        let store = try folder.store()
        let changes = ChangeRecorder(store.changes())
        // 1 MB in total: a big value, then one that would go over.
        let big = String(repeating: "x", count: 600_000)
        #expect(store.set(big, forKey: "a"))
        #expect(store.set("small", forKey: "b"))
        #expect(!store.set(big, forKey: "b"))
        #expect(store.string(forKey: "b") == "small")
        let change = await Self.next(changes)
        #expect(change == KeyValueStore.Change(reason: .quotaViolationChange, changedKeys: ["b"]))
        #expect {
            try store.setValue(.string(big), forKey: "c")
        } throws: { error in
            (error as? UbiquityError)?.code == .quotaExceeded
        }
        #expect(await Self.next(changes)?.reason == .quotaViolationChange)
        // Replacing the big value by another as big fits.
        #expect(store.set(big + "!", forKey: "a"))

        // 1024 keys.
        store.removeObject(forKey: "a")
        for index in 0..<(KeyValueLimits.maximumKeys - 1) { #expect(store.set(index, forKey: "k\(index)")) }
        #expect(store.values.count == KeyValueLimits.maximumKeys)
        #expect(!store.set(1, forKey: "one-more"))
        #expect(store.object(forKey: "one-more") == nil)
        #expect(store.set(2, forKey: "k0"))  // changing a key is fine
        #expect(await Self.next(changes) == KeyValueStore.Change(reason: .quotaViolationChange, changedKeys: ["one-more"]))
    }

    @Test func otherInstancesHearOfChangesButNotTheirOwn() async throws {
        let folder = Folder()
        let centerA = NotificationCenter(), centerB = NotificationCenter()
        let a = try folder.store(center: centerA)
        let b = try folder.store(center: centerB)
        let changesA = ChangeRecorder(a.changes())
        let changesB = ChangeRecorder(b.changes())
        let posted = PostedNotifications(center: centerB)

        #expect(a.set("hello", forKey: "greeting"))
        #expect(await Self.next(changesB) == KeyValueStore.Change(reason: .serverChange, changedKeys: ["greeting"]))
        #expect(b.string(forKey: "greeting") == "hello")
        let note = try #require(posted.first(seconds: 30))
        #expect(note.object == ObjectIdentifier(b))
        #expect(note.reason == NSUbiquitousKeyValueStoreServerChange)
        #expect(note.keys == ["greeting"])

        // B's change reaches A; A's own set never came back to A (the first change A sees is B's).
        b.removeObject(forKey: "greeting")
        #expect(await Self.next(changesA) == KeyValueStore.Change(reason: .serverChange, changedKeys: ["greeting"]))
        #expect(a.string(forKey: "greeting") == nil)

        // The sync's writes (on a connection of its own) arrive with the sync's reason.
        let sync = try KeyValueDatabase(path: try #require(a.database.path), logger: Logger(label: "test.kvs"))
        try sync.applyServerEntries([.init(key: "color", encodedValue: try KeyValueStore.Value.string("red").encoded(), modified: 5)],
                                          reason: NSUbiquitousKeyValueStoreInitialSyncChange, writer: "sync")
        #expect(await Self.next(changesA) == KeyValueStore.Change(reason: .initialSyncChange, changedKeys: ["color"]))
        #expect(await Self.next(changesB) == KeyValueStore.Change(reason: .initialSyncChange, changedKeys: ["color"]))
        #expect(a.string(forKey: "color") == "red")

        // An account change is told even when no value changed.
        try sync.logChange(reason: NSUbiquitousKeyValueStoreAccountChange, keys: ["color"], writer: "sync")
        #expect(await Self.next(changesB) == KeyValueStore.Change(reason: .accountChange, changedKeys: ["color"]))
    }

    @Test func dirtyFlagsClearOnlyForTheUploadedVersion() throws {
        let folder = Folder()
        let store = try folder.store()
        // The sync's own connection, as in the daemon.
        let database = try KeyValueDatabase(path: try #require(store.database.path), logger: Logger(label: "test.kvs"))
        #expect(store.set("one", forKey: "k"))
        let uploaded = try #require(try database.dirtyEntries().first)
        #expect(uploaded.key == "k")
        #expect(store.set("two", forKey: "k"))  // set again before the upload finished
        #expect(try database.markUploaded(uploaded) == false)
        let second = try #require(try database.dirtyEntries().first)
        #expect(second.modified > uploaded.modified)
        #expect(try database.markUploaded(second))
        #expect(try database.dirtyEntries().isEmpty)

        // The server's older value does not replace a newer local one still dirty; a newer one does.
        #expect(store.set("three", forKey: "k"))
        let local = try #require(try database.dirtyEntries().first)
        let older = try database.applyServerEntries([.init(key: "k", encodedValue: #"{"string":"old"}"#, modified: local.modified - 1)],
                                                    reason: 0, writer: "sync")
        #expect(older.isEmpty)
        let newer = try database.applyServerEntries([.init(key: "k", encodedValue: #"{"string":"new"}"#, modified: local.modified + 1)],
                                                    reason: 0, writer: "sync")
        #expect(newer == ["k"])
        #expect(try database.dirtyEntries().isEmpty)
        #expect(store.string(forKey: "k") == "new")
    }

    @Test func aCorruptFileIsMovedAsideAndReplaced() throws {
        let folder = Folder()
        let file = folder.paths.keyValueStoreFile(for: try ContainerIdentifier(Self.container))
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(repeating: 0x5A, count: 8192).write(to: file)
        let store = try folder.store()
        #expect(store.database.wasRebuilt)
        #expect(store.set("fresh", forKey: "k"))
        #expect(try folder.store().string(forKey: "k") == "fresh")
        let names = try FileManager.default.contentsOfDirectory(atPath: file.deletingLastPathComponent().path)
        #expect(names.contains { $0.hasPrefix(file.lastPathComponent + ".corrupt-") })
    }
}

/// Notifications posted on a center, collected (what the tests look at).
final class PostedNotifications: Sendable {
    struct Posted: Sendable {
        var object: ObjectIdentifier?
        var reason: Int?
        var keys: [String]?
    }

    private let received = Mutex<[Posted]>([])

    init(center: NotificationCenter) {
        _ = center.addObserver(forName: KeyValueStore.didChangeExternallyNotification, object: nil, queue: nil) { [weak self] note in
            let posted = Posted(object: (note.object as AnyObject?).map(ObjectIdentifier.init),
                                reason: note.userInfo?[KeyValueStore.changeReasonKey] as? Int,
                                keys: note.userInfo?[KeyValueStore.changedKeysKey] as? [String])
            self?.received.withLock { $0.append(posted) }
        }
    }

    func first(seconds: Double) -> Posted? {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while Date() < deadline {
            if let posted = received.withLock({ $0.first }) { return posted }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return nil
    }
}

/// Records a store's changes as they come, for tests to take one by one.
final class ChangeRecorder: Sendable {
    final class Box: Sendable {
        let changes = Mutex<[KeyValueStore.Change]>([])
        let taken = Mutex(0)
    }
    let box = Box()
    let task: Task<Void, Never>

    init(_ stream: AsyncStream<KeyValueStore.Change>) {
        let box = self.box
        task = Task {
            for await change in stream { box.changes.withLock { $0.append(change) } }
        }
    }

    deinit { task.cancel() }

    /// The next change not taken yet, or nil after a generous hang guard (30 s).
    func next(seconds: Double = 30) async -> KeyValueStore.Change? {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        while ContinuousClock.now < deadline {
            let index = box.taken.withLock { $0 }
            if let change = box.changes.withLock({ index < $0.count ? $0[index] : nil }) {
                box.taken.withLock { $0 += 1 }
                return change
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }
}
