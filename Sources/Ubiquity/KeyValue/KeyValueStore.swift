// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Synchronization
import UbiquityCore
import UbiquityIndex
import UbiquityStore

/// The iCloud key-value store (`NSUbiquitousKeyValueStore`): small values by key, the same on
/// every device of the account.
///
/// ```swift
/// let store = KeyValueStore.default
/// NotificationCenter.default.addObserver(forName: KeyValueStore.didChangeExternallyNotification,
///                                        object: store, queue: nil) { note in … }
/// store.synchronize()
/// store.set("blue", forKey: "theme")
/// let theme = store.string(forKey: "theme")
/// ```
///
/// Every set is written at once to the container's local file
/// (`$XDG_STATE_HOME/ubiquity/kvs/<container>.sqlite`, one per container, shared by every process
/// on this machine); the daemon's key-value sync uploads it and brings other devices' changes,
/// last writer winning by timestamp. Changes made by another process or by the sync reach this
/// store as ``didChangeExternallyNotification`` (and ``changes()``) with the reason and the
/// keys; this store's own sets do not notify it, as with Apple's store.
///
/// Limits (``KeyValueLimits``): keys of at most 64 UTF-8 bytes, at most 1024 keys and 1 MB in
/// total. A set over a limit fails, leaves the previous value, and (for the count and size
/// limits) posts the notification with ``ChangeReason/quotaViolationChange``.
public final class KeyValueStore: Sendable {
    /// The container used by ``default`` when the process declares none.
    public static let fallbackContainerIdentifier = "iCloud.org.ubiquity.Drive"

    /// The process's store: that of its default container (the first declared, see
    /// ``UbiquityContainers/shared``), or of `iCloud.org.ubiquity.Drive` when it declares none.
    /// If the file cannot be opened, the store works in memory and logs why.
    public static let `default`: KeyValueStore = {
        let logger = Logger(label: "ubiquity.kvs")
        let containers = UbiquityContainers.shared
        let identifier = containers.defaultIdentifier ?? (try! ContainerIdentifier(fallbackContainerIdentifier))
        do {
            return try KeyValueStore(containerIdentifier: identifier.rawValue, paths: containers.paths, logger: logger)
        } catch {
            logger.error("the key-value store cannot open its file; it keeps values in memory for this process only",
                         metadata: ["container": "\(identifier)", "error": "\(error)"])
            // An in-memory SQLite database cannot fail to open.
            return KeyValueStore(identifier: identifier, database: try! KeyValueDatabase(inMemoryWithLogger: logger),
                                 notificationCenter: .default, pollInterval: .milliseconds(250), logger: logger)
        }
    }()

    /// The container whose store this is.
    public let containerIdentifier: ContainerIdentifier
    /// The local file (shared with the sync and other processes).
    package let database: KeyValueDatabase
    /// How often the file is checked for other processes' changes when its folder cannot be
    /// watched; while it is, the kernel tells of every write to the folder and the file is
    /// checked then, and every ``backstopInterval`` as a backstop.
    public let pollInterval: Duration
    /// How often the file is checked while the kernel tells of its changes (a lost watch's
    /// backstop, not the way changes are noticed).
    public static let backstopInterval: Duration = .seconds(30)
    /// The watch of the file and its WAL (inotify, the process's one hub), while it holds.
    let fileSignal = Mutex<FileChangeSignal?>(nil)
    /// This instance's identity in the file's change log (its own sets do not notify it).
    let writerID = "store-" + UUID().uuidString
    let notificationCenter: NotificationCenter
    let logger: Logger
    let state: Mutex<State>
    /// The streams of ``changes()``.
    let changeStreams = Broadcaster<Change>(bufferingPolicy: .bufferingNewest(1024))
    /// Serialises refreshes, so that two threads never process one logged change twice.
    let refreshLock = Mutex(())
    /// One timer thread for every store's polling.
    static let timer = DeadlineTimer()

    struct State {
        /// The visible values (removed keys are absent).
        var values: [String: Value]
        var dataVersion: Int64
        var lastSequence: Int64
        var polling = false
        var pending: [Change] = []
        var delivering = false
    }

    /// The store of the container `containerIdentifier` (it need not be declared), in the file
    /// under `paths`; notifications are posted on `notificationCenter`.
    /// - Throws: `invalidArgument` for a malformed identifier, `io` when the file cannot be opened.
    public convenience init(containerIdentifier: String, paths: UbiquityPaths = UbiquityPaths(),
                            notificationCenter: NotificationCenter = .default, pollInterval: Duration = .milliseconds(250),
                            logger: Logger = Logger(label: "ubiquity.kvs")) throws {
        let identifier = try ContainerIdentifier(containerIdentifier)
        let database = try KeyValueDatabase(path: paths.keyValueStoreFile(for: identifier).path, logger: logger)
        self.init(identifier: identifier, database: database, notificationCenter: notificationCenter,
                  pollInterval: pollInterval, logger: logger)
    }

    init(identifier: ContainerIdentifier, database: KeyValueDatabase, notificationCenter: NotificationCenter,
         pollInterval: Duration, logger: Logger) {
        containerIdentifier = identifier
        self.database = database
        self.notificationCenter = notificationCenter
        self.pollInterval = pollInterval
        self.logger = logger
        var values: [String: Value] = [:]
        var version: Int64 = 0
        var sequence: Int64 = 0
        do {
            sequence = try database.lastChangeSequence()
            version = try database.dataVersion()
            values = Self.visible(try database.allEntries())
        } catch {
            logger.error("cannot read the key-value store", metadata: ["container": "\(identifier)", "error": "\(error)"])
        }
        state = Mutex(State(values: values, dataVersion: version, lastSequence: sequence))
        let watching = watchFile()
        if watching { refresh() }  // a write between the first read and the watch
        startPolling(every: watching ? max(pollInterval, Self.backstopInterval) : pollInterval)
    }

    static func visible(_ entries: [String: KeyValueDatabase.Entry]) -> [String: Value] {
        var values: [String: Value] = [:]
        for (key, entry) in entries {
            if let encoded = entry.encodedValue, let value = Value.decoded(encoded) { values[key] = value }
        }
        return values
    }

    // MARK: - Reading and writing values

    /// The value of `key`, nil when it has none. Reads what other processes wrote up to now.
    public func value(forKey key: String) -> Value? {
        refresh()
        return state.withLock { $0.values[key] }
    }

    /// Every key and value (Foundation types, as ``object(forKey:)`` gives them).
    public var dictionaryRepresentation: [String: Any] {
        refresh()
        return state.withLock { $0.values }.mapValues(\.anyValue)
    }

    /// Every key and value.
    public var values: [String: Value] {
        refresh()
        return state.withLock { $0.values }
    }

    /// Sets `key` to `value` (nil removes it), written to the file at once.
    /// - Throws: `invalidArgument` for a key over 64 UTF-8 bytes (or empty) or a value that cannot
    ///   be stored (a non-finite double); `quotaExceeded` when the store would hold more than 1024
    ///   keys or 1 MB, after posting the notification with ``ChangeReason/quotaViolationChange``;
    ///   `io` when the file cannot be written. The previous value stays on every error.
    public func setValue(_ value: Value?, forKey key: String) throws {
        do {
            let encoded = try value?.encoded()
            guard let entry = try database.set(key, encodedValue: encoded, writer: writerID) else { return }
            state.withLock { state in
                state.values[key] = entry.encodedValue.flatMap(Value.decoded)
            }
        } catch let error as UbiquityError where error.code == .quotaExceeded {
            enqueue(Change(reason: .quotaViolationChange, changedKeys: [key]))
            throw error
        }
    }

    /// Sets `key` to `value` (nil removes it); false (and the error logged) when it fails — see
    /// ``setValue(_:forKey:)`` for why it may.
    @discardableResult
    public func set(_ value: Value?, forKey key: String) -> Bool { setLogging(value, forKey: key) }

    /// ``setValue(_:forKey:)``, with errors logged and turned into false.
    func setLogging(_ value: Value?, forKey key: String) -> Bool {
        do {
            try setValue(value, forKey: key)
            return true
        } catch {
            logger.error("key-value store: cannot set a value", metadata: ["key": "\(key)", "error": "\(error)"])
            return false
        }
    }

    /// Removes `key` (`removeObject(forKey:)`).
    public func removeObject(forKey key: String) {
        _ = setLogging(nil, forKey: key)
    }

    /// Apple's `synchronize()`: every set is already written to the file, so this reads what
    /// other processes and the sync wrote meanwhile (posting their notifications) and says
    /// whether the file could be read. Call it once at launch, after adding observers.
    @discardableResult
    public func synchronize() -> Bool {
        refresh()
        do {
            _ = try database.dataVersion()
            return true
        } catch {
            logger.error("key-value store: cannot read the file", metadata: ["error": "\(error)"])
            return false
        }
    }
}
