// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityIndex
import UbiquityStore

extension KeyValueStore {
    /// Apple's `NSUbiquitousKeyValueStoreDidChangeExternallyNotification`: posted on the store's
    /// notification center (`NotificationCenter.default`), with the store as object, when values
    /// change because of another process or the sync (never for this store's own sets), and when
    /// a set of this store fails over the quota. `userInfo`: ``changeReasonKey`` (an `Int`, a
    /// ``ChangeReason`` raw value) and ``changedKeysKey`` (`[String]`).
    public static let didChangeExternallyNotification = Notification.Name("NSUbiquitousKeyValueStoreDidChangeExternallyNotification")
    /// `NSUbiquitousKeyValueStoreChangeReasonKey`: the reason, an `Int` (``ChangeReason``'s raw value).
    public static let changeReasonKey = "NSUbiquitousKeyValueStoreChangeReasonKey"
    /// `NSUbiquitousKeyValueStoreChangedKeysKey`: the changed keys, `[String]`.
    public static let changedKeysKey = "NSUbiquitousKeyValueStoreChangedKeysKey"

    /// Why values changed (Apple's raw values).
    public enum ChangeReason: Int, Sendable, Hashable, CustomStringConvertible {
        /// Another device (or another process here) changed values: `NSUbiquitousKeyValueStoreServerChange`.
        case serverChange = 0
        /// The first download from the server: `NSUbiquitousKeyValueStoreInitialSyncChange`.
        case initialSyncChange = 1
        /// A set would have gone over the limits and was refused: `NSUbiquitousKeyValueStoreQuotaViolationChange`.
        case quotaViolationChange = 2
        /// The signed-in account changed: `NSUbiquitousKeyValueStoreAccountChange`.
        case accountChange = 3

        /// `serverChange`, `initialSyncChange`, `quotaViolationChange` or `accountChange`.
        public var description: String {
            switch self {
            case .serverChange: return "serverChange"
            case .initialSyncChange: return "initialSyncChange"
            case .quotaViolationChange: return "quotaViolationChange"
            case .accountChange: return "accountChange"
            }
        }
    }

    /// One change notification: why, and which keys.
    public struct Change: Sendable, Hashable {
        /// Why the values changed.
        public var reason: ChangeReason
        /// The keys whose values changed.
        public var changedKeys: [String]

        /// Makes a change.
        public init(reason: ChangeReason, changedKeys: [String]) {
            self.reason = reason
            self.changedKeys = changedKeys
        }

        /// The change from a posted notification's `userInfo`; nil when it is not one.
        public init?(_ notification: Notification) {
            guard notification.name == KeyValueStore.didChangeExternallyNotification,
                  let raw = notification.userInfo?[KeyValueStore.changeReasonKey] as? Int,
                  let reason = ChangeReason(rawValue: raw) else { return nil }
            self.init(reason: reason, changedKeys: notification.userInfo?[KeyValueStore.changedKeysKey] as? [String] ?? [])
        }
    }

    /// Every change notification of this store from now on, as an `AsyncSequence` (the same
    /// changes ``didChangeExternallyNotification`` posts, in order). The stream finishes when the
    /// store is released.
    public func changes() -> AsyncStream<Change> {
        changeStreams.subscribe()
    }

    func startPolling(every interval: Duration) {
        _ = Self.timer.schedule(after: interval) { [weak self] in
            guard let self else { return }
            self.refresh()
            self.startPolling(every: interval)
        }
    }

    /// Watches the file and its WAL (another process's commit writes there; ``FileChangeSignal``);
    /// every change checks the file. False for an in-memory store or a file that cannot be watched.
    func watchFile() -> Bool {
        guard let path = database.path,
              let signal = FileChangeSignal(path: path, logger: logger, onChange: { [weak self] in self?.refresh() }) else { return false }
        fileSignal.withLock { $0 = signal }
        return true
    }

    /// Reads the changes other connections made to the file since the last look, updates the
    /// values and delivers their notifications. Cheap when nothing changed (one
    /// `PRAGMA data_version`).
    func refresh() {
        let changes = refreshLock.withLock { _ -> [Change] in
            do {
                let version = try database.dataVersion()
                let (lastVersion, lastSequence) = state.withLock { ($0.dataVersion, $0.lastSequence) }
                guard version != lastVersion else { return [] }
                let (logged, missed) = try database.changes(after: lastSequence)
                let sequence = logged.last?.sequence ?? lastSequence
                if missed {
                    let fresh = Self.visible(try database.allEntries())
                    return state.withLock { state -> [Change] in
                        let keys = Set(fresh.keys).union(state.values.keys).filter { fresh[$0] != state.values[$0] }.sorted()
                        state.values = fresh
                        state.dataVersion = version
                        state.lastSequence = sequence
                        return keys.isEmpty ? [] : [Change(reason: .serverChange, changedKeys: keys)]
                    }
                }
                let foreign = logged.filter { $0.writer != writerID }
                let rows = try database.entries(Array(Set(foreign.flatMap(\.keys))))
                return state.withLock { state -> [Change] in
                    var changes: [Change] = []
                    for change in foreign {
                        let reason = ChangeReason(rawValue: change.reason) ?? .serverChange
                        var keys: [String] = []
                        for key in change.keys {
                            let value = rows[key]?.encodedValue.flatMap(Value.decoded)
                            if state.values[key] != value {
                                state.values[key] = value
                                keys.append(key)
                            }
                        }
                        // An account change is always told, with the keys it names.
                        if reason == .accountChange { keys = change.keys }
                        if !keys.isEmpty || reason == .accountChange { changes.append(Change(reason: reason, changedKeys: keys)) }
                    }
                    state.dataVersion = version
                    state.lastSequence = sequence
                    return changes
                }
            } catch {
                logger.warning("key-value store: cannot read changes", metadata: ["error": "\(error)"])
                return []
            }
        }
        if !changes.isEmpty {
            state.withLock { $0.pending += changes }
            deliver()
        }
    }

    func enqueue(_ change: Change) {
        state.withLock { $0.pending.append(change) }
        deliver()
    }

    /// Delivers queued changes in order; only one thread delivers at a time.
    func deliver() {
        let owner = state.withLock { state -> Bool in
            if state.delivering { return false }
            state.delivering = true
            return true
        }
        guard owner else { return }
        while true {
            let next = state.withLock { state -> Change? in
                guard !state.pending.isEmpty else {
                    state.delivering = false
                    return nil
                }
                return state.pending.removeFirst()
            }
            guard let change = next else { return }
            changeStreams.yield(change)
            notificationCenter.post(name: Self.didChangeExternallyNotification, object: self,
                                    userInfo: [Self.changeReasonKey: change.reason.rawValue, Self.changedKeysKey: change.changedKeys])
        }
    }
}

/// Apple's `NSUbiquitousKeyValueStore`.
public typealias NSUbiquitousKeyValueStore = KeyValueStore
/// Apple's `NSUbiquitousKeyValueStoreServerChange` (0).
public let NSUbiquitousKeyValueStoreServerChange = KeyValueStore.ChangeReason.serverChange.rawValue
/// Apple's `NSUbiquitousKeyValueStoreInitialSyncChange` (1).
public let NSUbiquitousKeyValueStoreInitialSyncChange = KeyValueStore.ChangeReason.initialSyncChange.rawValue
/// Apple's `NSUbiquitousKeyValueStoreQuotaViolationChange` (2).
public let NSUbiquitousKeyValueStoreQuotaViolationChange = KeyValueStore.ChangeReason.quotaViolationChange.rawValue
/// Apple's `NSUbiquitousKeyValueStoreAccountChange` (3).
public let NSUbiquitousKeyValueStoreAccountChange = KeyValueStore.ChangeReason.accountChange.rawValue
/// Apple's `NSUbiquitousKeyValueStoreChangeReasonKey`.
public let NSUbiquitousKeyValueStoreChangeReasonKey = KeyValueStore.changeReasonKey
/// Apple's `NSUbiquitousKeyValueStoreChangedKeysKey`.
public let NSUbiquitousKeyValueStoreChangedKeysKey = KeyValueStore.changedKeysKey
