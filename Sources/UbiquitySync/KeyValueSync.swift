// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Synchronization
import Ubiquity
import UbiquityIndex
import UbiquityStore
import UbiquityCloudKit

/// The key-value store's sync, one per container, run by the daemon: it uploads the entries set
/// on this machine, downloads other devices' changes and writes them into the local store, where
/// every process using the store sees them as `didChangeExternallyNotification` (reason
/// `initialSyncChange` for the first download, `serverChange` after).
///
/// - **Upload**: dirty entries are saved as `KeyValueEntry` records in the reserved zone
///   `_ubiquityKeyValueStore` of the private database. The server keeps the later timestamp
///   (``KeyValueLimits``, `KeyValueRules` on the server): when it answers with its own newer
///   record, that record is adopted here. An entry's dirty flag is cleared only when the server
///   accepted that exact version (set again meanwhile, it stays dirty). An entry the server
///   refuses over the quota is put back to the server's value (reason `quotaViolationChange`).
/// - **Download**: zone changes since a change token saved in the store's file (with the entries,
///   in one transaction); an expired token starts over.
/// - **Wake-ups**: a zone subscription and the container's push (`CloudContainer.notifications()`),
///   local sets (the file's `data_version`, checked when inotify says the file was written, and
///   every 10 s as a safety net — every `pollInterval` without inotify), a second round 2 s after
///   starting (push delivers only what happens once it is connected), a periodic fetch as a
///   safety net, and retries with back-off while the server is unreachable.
///
/// Start it with ``start()`` and stop it with ``stop()`` (or run ``run()`` in a task of your own).
package final class KeyValueSync: Sendable {
    /// The zone subscription's ID in the private database.
    package static let subscriptionID = "ubiquity-key-value-store"
    /// The key in the store's sync state holding the zone change token.
    static let tokenKey = "changeToken"
    /// When, after starting, a second round runs (push is connected by then, normally).
    static let connectionSettle = Duration.seconds(2)
    /// The writer name of the sync's changes in the store's change log.
    static let writerID = "sync"

    /// The container synced.
    package let container: CloudContainer
    /// The local store's file.
    package let database: KeyValueDatabase
    let logger: Logger
    let pollInterval: Duration
    let fetchInterval: Duration
    private let task = Mutex<Task<Void, Never>?>(nil)
    private let rounds = Mutex(0)

    /// The zone of the entries.
    package static var zoneID: RecordZone.ID { RecordZone.ID(zoneName: KeyValueRecord.zoneName) }

    /// A sync of `container`'s key-value store, in its file under `paths`
    /// (`$XDG_STATE_HOME/ubiquity/kvs/<container>.sqlite`).
    /// - Throws: `invalidArgument` for a malformed container identifier, `io` when the file cannot be opened.
    package convenience init(container: CloudContainer, paths: UbiquityPaths = UbiquityPaths(), logger: Logger,
                            pollInterval: Duration = .milliseconds(100), fetchInterval: Duration = .seconds(60)) throws {
        let identifier = try ContainerIdentifier(container.containerIdentifier)
        let database = try KeyValueDatabase(path: paths.keyValueStoreFile(for: identifier).path, logger: logger)
        self.init(container: container, database: database, logger: logger, pollInterval: pollInterval, fetchInterval: fetchInterval)
    }

    /// A sync of `container` into `database`.
    package init(container: CloudContainer, database: KeyValueDatabase, logger: Logger,
                 pollInterval: Duration = .milliseconds(100), fetchInterval: Duration = .seconds(60)) {
        self.container = container
        self.database = database
        self.logger = logger
        self.pollInterval = pollInterval
        self.fetchInterval = fetchInterval
    }

    /// Starts ``run()`` in a task of its own (does nothing when it runs already).
    package func start() {
        task.withLock { task in
            guard task == nil else { return }
            task = Task { [self] in await run() }
        }
    }

    /// Stops what ``start()`` started and waits until it has stopped.
    package func stop() async {
        let running = task.withLock { task -> Task<Void, Never>? in
            defer { task = nil }
            return task
        }
        running?.cancel()
        await running?.value
    }

    /// How many sync rounds completed (for tests and status).
    package var completedRounds: Int { rounds.withLock { $0 } }

    /// Syncs until the task is cancelled: a round at once, then one after every wake-up.
    package func run() async {
        let (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        await withTaskCancellationHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.listenToPush(wake) }
                group.addTask { await self.keepClockOffset() }
                group.addTask { await self.watchLocalChanges(wake) }
                group.addTask {
                    // Push delivers what happens after its connection is up: one more round once it
                    // has had time to connect catches what changed while it connected.
                    guard (try? await Task.sleep(for: Self.connectionSettle)) != nil else { return }
                    wake.yield()
                    while (try? await Task.sleep(for: self.fetchInterval)) != nil { wake.yield() }
                }
                group.addTask {
                    var backoff = Duration.milliseconds(250)
                    wake.yield()
                    for await _ in wakeups {
                        do {
                            try await self.synchronize()
                            backoff = .milliseconds(250)
                        } catch is CancellationError {
                            return
                        } catch {
                            if Task.isCancelled { return }
                            self.logger.warning("key-value sync failed; retrying", metadata: [
                                "container": "\(self.container.containerIdentifier)", "error": "\(error)", "retryIn": "\(backoff)"])
                            guard (try? await Task.sleep(for: backoff)) != nil else { return }
                            backoff = min(backoff * 2, .seconds(30))
                            wake.yield()
                        }
                    }
                }
                await group.waitForAll()
            }
        } onCancel: {
            wake.finish()
        }
    }

    /// One round: uploads what was set here, then downloads what changed on the server.
    package func synchronize() async throws {
        try await upload()
        try await download()
        rounds.withLock { $0 += 1 }
    }

    // MARK: - Upload

    func upload() async throws {
        let database = self.database
        let dirty = try await BlockingWork.run { try database.dirtyEntries() }
        guard !dirty.isEmpty else { return }
        let records = dirty.map { entry -> Record in
            var record = Record(recordType: KeyValueRecord.recordType,
                                recordID: Record.ID(recordName: entry.key, zoneID: Self.zoneID))
            if let value = entry.encodedValue { record[KeyValueRecord.valueField] = RecordValue.string(value) }
            record[KeyValueRecord.modifiedField] = RecordValue.int64(entry.modified)
            return record
        }
        let results = try await container.privateCloudDatabase.modifyRecords(saving: records, deleting: [], savePolicy: .allKeys,
                                                                              atomically: false).saveResults
        var accepted: [KeyValueDatabase.Entry] = []
        var adopted: [KeyValueDatabase.ServerEntry] = []
        var refused: [String] = []
        for entry in dirty {
            switch results[Record.ID(recordName: entry.key, zoneID: Self.zoneID)] {
            case .success(let record)?:
                let server = Self.serverEntry(record)
                if server.modified == entry.modified, server.encodedValue == entry.encodedValue {
                    accepted.append(entry)
                } else {
                    adopted.append(server)
                }
            case .failure(let error)?:
                if let error = error as? CloudKitError, [.quotaExceeded, .limitExceeded, .invalidArguments].contains(error.code) {
                    logger.warning("the server refused a key-value entry; putting back its value", metadata: [
                        "key": "\(entry.key)", "error": "\(error)"])
                    refused.append(entry.key)
                } else {
                    throw error
                }
            case nil:
                throw CloudKitError(.internalError, "the server did not answer for key \(entry.key)")
            }
        }
        let accepts = accepted, adopts = adopted
        _ = try await BlockingWork.run {
            for entry in accepts { try database.markUploaded(entry) }
            if !adopts.isEmpty {
                try database.applyServerEntries(adopts, reason: KeyValueStore.ChangeReason.serverChange.rawValue, writer: Self.writerID)
            }
        }
        if !refused.isEmpty { try await revert(refused) }
    }

    /// Puts refused keys back to the server's values (or removes them when it has none).
    func revert(_ keys: [String]) async throws {
        let ids = keys.map { Record.ID(recordName: $0, zoneID: Self.zoneID) }
        let found = try await container.privateCloudDatabase.records(for: ids)
        let database = self.database
        let local = try await BlockingWork.run { try database.entries(keys) }
        let entries = keys.map { key -> KeyValueDatabase.ServerEntry in
            if case .success(let record)? = found[Record.ID(recordName: key, zoneID: Self.zoneID)] { return Self.serverEntry(record) }
            // Not on the server: removed, just after the refused version.
            return KeyValueDatabase.ServerEntry(key: key, encodedValue: nil, modified: (local[key]?.modified ?? 0) + 1)
        }
        _ = try await BlockingWork.run {
            try database.applyServerEntries(entries, reason: KeyValueStore.ChangeReason.quotaViolationChange.rawValue, writer: Self.writerID)
        }
    }

    // MARK: - Download

    func download() async throws {
        let database = self.database
        var token = try await BlockingWork.run { try database.syncState(Self.tokenKey) }.map(ServerChangeToken.init(rawValue:))
        let reason = token == nil ? KeyValueStore.ChangeReason.initialSyncChange : .serverChange
        while true {
            let page: (modificationResultsByID: [Record.ID: Result<CloudDatabase.RecordZoneChange.Modification, any Error>],
                       deletions: [CloudDatabase.RecordZoneChange.Deletion], changeToken: ServerChangeToken, moreComing: Bool)
            do {
                page = try await container.privateCloudDatabase.recordZoneChanges(inZoneWith: Self.zoneID, since: token)
            } catch let error as CloudKitError where error.code == .changeTokenExpired && token != nil {
                logger.info("the key-value store's change token expired; fetching everything")
                token = nil
                continue
            }
            var entries: [KeyValueDatabase.ServerEntry] = []
            for (_, result) in page.modificationResultsByID {
                if case .success(let modification) = result, modification.record.recordType == KeyValueRecord.recordType {
                    entries.append(Self.serverEntry(modification.record))
                }
            }
            for deletion in page.deletions {
                entries.append(KeyValueDatabase.ServerEntry(key: deletion.recordID.recordName, encodedValue: nil, modified: nil))
            }
            let newToken = page.changeToken.rawValue
            let batch = entries
            _ = try await BlockingWork.run {
                try database.applyServerEntries(batch, reason: reason.rawValue, writer: Self.writerID, syncState: [Self.tokenKey: newToken])
            }
            token = page.changeToken
            if !page.moreComing { break }
        }
    }

    static func serverEntry(_ record: Record) -> KeyValueDatabase.ServerEntry {
        let value: String?
        let valueField: RecordValue? = record[KeyValueRecord.valueField]
        let modifiedField: RecordValue? = record[KeyValueRecord.modifiedField]
        switch valueField {
        case .string(let string)?: value = string
        case .bytes(let data)?: value = String(decoding: data, as: UTF8.self)
        default: value = nil
        }
        let modified: Int64?
        switch modifiedField {
        case .int64(let ms)?: modified = ms
        case .date(let date)?: modified = Int64((date.timeIntervalSince1970 * 1000).rounded())
        default: modified = 0
        }
        return KeyValueDatabase.ServerEntry(key: record.recordID.recordName, encodedValue: value, modified: modified)
    }

    // MARK: - Wake-ups

    /// Saves the zone subscription (once), then wakes a round on every notification.
    func listenToPush(_ wake: AsyncStream<Void>.Continuation) async {
        var backoff = Duration.seconds(1)
        while !Task.isCancelled {
            do {
                let subscription = RecordZoneSubscription(zoneID: Self.zoneID, subscriptionID: Self.subscriptionID)
                do {
                    _ = try await container.privateCloudDatabase.save(subscription)
                } catch let error as CloudKitError where error.code != .networkFailure && error.code != .networkUnavailable {
                    // Saved by an earlier run, or refused: listen anyway (the periodic fetch covers the rest).
                    logger.debug("key-value sync: zone subscription not saved", metadata: ["error": "\(error)"])
                }
                // once connected, a round: a change pushed before the connection is not delivered
                for try await _ in container.notifications(onConnect: { wake.yield() }) {
                    wake.yield()
                }
                return
            } catch {
                if Task.isCancelled { return }
                logger.debug("key-value sync: push unavailable; retrying", metadata: ["error": "\(error)"])
                guard (try? await Task.sleep(for: backoff)) != nil else { return }
                backoff = min(backoff * 2, .seconds(60))
            }
        }
    }

    /// Wakes a round when another connection (a process setting a value) changed the file: its
    /// `data_version` is checked when inotify says the file or its `-wal` was written
    /// (``FileChangeSignal``; the daemon's own writes are told too, and leave the version as it
    /// is), and every ``idlePollInterval`` as a safety net; every `pollInterval` when the file
    /// cannot be watched.
    func watchLocalChanges(_ wake: AsyncStream<Void>.Continuation) async {
        let database = self.database
        let version = Mutex((try? await BlockingWork.run { try database.dataVersion() }) ?? 0)
        @Sendable func check() {
            guard let now = try? database.dataVersion() else { return }
            let changed = version.withLock { version in
                defer { version = now }
                return version != now
            }
            if changed { wake.yield() }
        }
        let signal = database.path.flatMap { FileChangeSignal(path: $0, logger: logger, onChange: check) }
        defer { signal?.stop() }
        let interval = signal == nil ? pollInterval : max(pollInterval, Self.idlePollInterval)
        while (try? await Task.sleep(for: interval)) != nil {
            _ = try? await BlockingWork.run { check() }
        }
    }

    /// How often the file's `data_version` is checked when inotify watches it (a safety net).
    static let idlePollInterval = Duration.seconds(10)
}
