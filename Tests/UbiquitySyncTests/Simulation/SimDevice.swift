// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Ubiquity
import UbiquityCloudKit
import UbiquityCore
import UbiquityIndex
import UbiquityStore
@testable import UbiquitySync

/// One simulated device: a folder (a real one, in the run's temporary folder), its device
/// database and journal, its network, and the real `SyncEngine`, made again after each crash
/// from what the database and the folder kept. Passes are run by the world, one at a time
/// (the engine's own watcher, push listener and timers are not started: the world decides
/// when anything happens).
final class SimDevice {
    let name: String
    let number: Int
    let folder: URL
    let network: SimNetwork
    let index: IndexHost
    /// Its disk: what a power loss leaves of the folder.
    let disk: SimDisk
    private(set) var engine: SyncEngine
    /// How many times it crashed and started again (seeds each life's randomness).
    private(set) var lives = 0
    /// Its clock's offset from the world's (seconds): file times it writes are skewed by it.
    var skew: Double = 0
    private let seed: UInt64
    private let server: SimServer
    /// The account it is signed in to (``SimServer``'s users), and its container factory.
    private(set) var account = "mei"
    private var makeContainer: SyncEngine.ContainerFactory
    /// Folders where a switch of account kept the previous account's documents.
    private(set) var keptAside: [URL] = []
    private let ledger: SimLedger
    private let logger: Logger

    /// Whether a user may edit a file as its download lands (the engine's `afterWrite` hook).
    private let editsDuringDownloads: Bool

    init(name: String, number: Int, directory: URL, server: SimServer, seed: UInt64, ledger: SimLedger, editsDuringDownloads: Bool,
         logger: Logger) async throws {
        self.name = name
        self.editsDuringDownloads = editsDuringDownloads
        self.number = number
        self.seed = seed
        self.ledger = ledger
        self.logger = logger
        self.server = server
        folder = directory.appendingPathComponent(name)
        network = SimNetwork(seed: seed ^ UInt64(number) << 32)
        index = IndexHost(index: try MetadataIndex(path: directory.appendingPathComponent("\(name)-device.sqlite").path, logger: logger), logger: logger)
        makeContainer = Self.containers(server: server, token: try await server.token(), network: network, logger: logger)
        engine = try Self.engine(name: name, account: account, folder: folder, index: index, makeContainer: makeContainer,
                                 randomness: RandomSource(seed: seed ^ UInt64(number) << 40), ledger: ledger, logger: logger)
        disk = SimDisk(folder: try CanonicalPath.canonicalize(folder.path, resolveLast: true), seed: seed ^ UInt64(number) << 24, ledger: ledger)
        await installHooks()
    }

    /// The containers of the account whose web token is `token`, reached through `network`.
    private static func containers(server: SimServer, token: String, network: SimNetwork, logger: Logger) -> SyncEngine.ContainerFactory {
        let (url, api) = (server.url, server.api)
        return { identifier in
            // retries are not waited for: the simulation's time is virtual
            CloudContainer(identifier: identifier, serverURL: url, credentials: .apiToken(api, webAuthToken: token), transport: network,
                           logger: logger, retryPolicy: CloudContainer.RetryPolicy(maximumAttempts: 3, maximumDelay: 0, defaultDelay: 0))
        }
    }

    /// The journal of `account` (one per account, as `AccountSync` keeps them).
    private static func journalName(_ account: String) -> String { "sim-\(account)" }

    private static func engine(name: String, account: String, folder: URL, index: IndexHost, makeContainer: @escaping SyncEngine.ContainerFactory,
                               randomness: RandomSource, ledger: SimLedger, logger: Logger) throws -> SyncEngine {
        try SyncEngine(makeContainer: makeContainer, folder: folder.path, index: index, journalName: journalName(account), deviceName: name,
                       massDeleteShare: 1, massDeleteMinimum: 1_000_000, logger: logger,
                       onEvent: { event in if case .conflict = event { ledger.count(.conflict) } }, randomness: randomness)
    }

    /// The engine's test hooks: a user's edit right after a download lands, and the disk's
    /// faults (and a crash) while new files are written.
    private func installHooks() async {
        let (ledger, network, name, folder, disk, edits) = (self.ledger, self.network, self.name, self.folder, self.disk, editsDuringDownloads)
        await engine.setAfterWrite { path in
            let url = folder.appendingPathComponent(path)
            guard ledger.chance(0.08), edits, let old = FileManager.default.contents(atPath: url.path) else { return }
            let new = old + Data("\nedited on \(name) as it arrived".utf8)
            ledger.supersede(old)
            ledger.wrote(new, origin: "edit during download on \(name)")
            if (try? new.write(to: url)) != nil {
                disk.userChanged([path])
                ledger.count(.editDuringDownload)
            }
        }
        await engine.setNewFilesFault { stage in
            if network.state.withLock({ $0.dead }) { throw CancellationError() }
            guard ledger.chance(0.05) else { return }
            if ledger.chance(0.4) {
                // the device dies with the temporaries written and not yet renamed into place
                network.state.withLock { $0.dead = true }
                ledger.count(.crashMidWrite)
                throw CancellationError()
            }
            ledger.count(.diskFault)
            throw POSIXError(ledger.chance(0.5) ? .ENOSPC : .EIO)
        }
    }

    /// The device dies and starts again: the engine is stopped (its lock given up) and made
    /// again from the device database and the folder; the network comes back. (What the old
    /// engine did after the crash point is what a pass does after a failed request.) With
    /// `powerLoss`, the folder loses what its disk had not made durable (``SimDisk``; the
    /// device database, SQLite, keeps what it committed); returns how many items that changed.
    @discardableResult
    func restart(powerLoss: Bool = false) async throws -> Int {
        await engine.stopAndRelease()
        let changed = powerLoss ? try disk.powerLoss() : 0
        lives += 1
        await network.flush()
        network.state.withLock { state in
            state.dead = false
            state.crashAt = nil
            state.pauseAt = nil
        }
        try startEngine()
        await installHooks()
        return changed
    }

    private func startEngine() throws {
        engine = try Self.engine(name: name, account: account, folder: folder, index: index, makeContainer: makeContainer,
                                 randomness: RandomSource(seed: seed ^ UInt64(number) << 40 ^ UInt64(lives) << 48), ledger: ledger, logger: logger)
    }

    /// The user signs in again: to the same account (a new device token: the sync carries on
    /// with its journal), or to `user`, another one, as `AccountSync` does it: the folder's
    /// content kept aside as `FOLDER (ACCOUNT on sim)`, the journal forgotten, and the sync
    /// started for the new account into the empty folder. Returns the folder kept aside.
    @discardableResult
    func signIn(as user: String) async throws -> URL? {
        await engine.stopAndRelease()
        var kept: URL?
        if user != account {
            let target = AccountSync.asideFolder(for: folder.path, user: account, host: "sim")
            try AccountSync.moveAside(folder.path, to: target)
            try index.index.forgetJournal(name: Self.journalName(account))
            kept = URL(fileURLWithPath: target)
            keptAside.append(URL(fileURLWithPath: target))
            disk.settleAll()  // (a deliberate move, synced: the new empty folder is the durable state)
        }
        account = user
        makeContainer = Self.containers(server: server, token: try await server.token(for: user), network: network, logger: logger)
        lives += 1
        try startEngine()
        await installHooks()
        return kept
    }

    // MARK: The folder

    func url(_ relative: String) -> URL { folder.appendingPathComponent(relative) }

    func read(_ relative: String) -> Data? { FileManager.default.contents(atPath: url(relative).path) }

    /// Writes `data` at `relative` (folders made), its modification time the device's clock.
    func write(_ relative: String, _ data: Data, at time: Double) throws {
        let target = url(relative)
        try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: target)
        stamp(relative, time)  // (which tells the disk: durable)
    }

    /// Sets the modification time of `relative` to the device's clock at world time `time`; a
    /// user's change, durable at once.
    func stamp(_ relative: String, _ time: Double) {
        try? FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: time + skew)], ofItemAtPath: url(relative).path)
        disk.userChanged([relative])
    }

    /// What the folder holds, by relative path: files (their bytes), folders, and the names the
    /// engine keeps for itself (stubs of evicted files, temporaries, its lock).
    func listing() -> SimListing {
        var listing = SimListing()
        let root = folder.path
        guard let walker = FileManager.default.enumerator(atPath: root) else { return listing }
        while let relative = walker.nextObject() as? String {
            let name = (relative as NSString).lastPathComponent
            let path = root + "/" + relative
            if name.hasPrefix(".ubiquity-") {
                walker.skipDescendants()
                continue
            }
            if name.hasPrefix(SafeSave.temporaryPrefix) {
                // (a folder of temporaries with what it holds: which writer left it)
                let inside = FileManager.default.subpaths(atPath: path) ?? []
                listing.temporaries.append(inside.isEmpty ? relative : relative + " holding \(inside.sorted())")
                walker.skipDescendants()
                continue
            }
            if name.hasPrefix("."), name.hasSuffix(".icloud") { listing.stubs.append(relative); continue }
            if (try? BackupExclusion.isExcluded(path)) == true {
                listing.excluded.append(relative)
                // its bytes, or the bytes of every file under it, stay here only
                let files = FileManager.default.subpaths(atPath: path).map { $0.map { path + "/" + $0 } } ?? [path]
                for file in files + [path] {
                    if let data = FileManager.default.contents(atPath: file) { listing.excludedContents.append(SimLedger.digest(data)) }
                    listing.excludedContents += Self.versionContents(of: URL(fileURLWithPath: file)).map(SimLedger.digest)
                }
                walker.skipDescendants()
                continue
            }
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
            if isDirectory.boolValue {
                listing.items[relative] = .folder
            } else if let data = FileManager.default.contents(atPath: path) {
                listing.items[relative] = .file(SimLedger.digest(data))
            }
        }
        return listing
    }

    /// The stubs of the evicted files kept aside by switches of account: each stands for a
    /// record of the old account's server (a switch deletes nothing there).
    func keptAsideStubs() -> [Placeholder] {
        keptAside.flatMap { folder -> [Placeholder] in
            (FileManager.default.subpaths(atPath: folder.path) ?? []).compactMap { relative in
                let name = (relative as NSString).lastPathComponent
                guard name.hasPrefix("."), name.hasSuffix(".icloud") else { return nil }
                return Placeholder.read(stubAt: folder.appendingPathComponent(relative).path)
            }
        }
    }

    /// The digests of the files kept aside by switches of account, and of their versions.
    func keptAsideDigests() -> [String] {
        keptAside.flatMap { folder -> [String] in
            (FileManager.default.subpaths(atPath: folder.path) ?? []).flatMap { relative -> [String] in
                let url = folder.appendingPathComponent(relative)
                let own = FileManager.default.contents(atPath: url.path).map { [SimLedger.digest($0)] } ?? []
                return own + Self.versionContents(of: url).map(SimLedger.digest)
            }
        }
    }

    /// The digests of the other versions (conflict versions among them) of the files in the folder.
    func versionDigests(_ listing: SimListing) -> [String] {
        listing.files.flatMap { Self.versionContents(of: url($0)).map(SimLedger.digest) }
    }

    /// The bytes of the other versions of the item at `url` (conflict versions among them).
    static func versionContents(of url: URL) -> [Data] {
        (FileVersion.otherVersionsOfItem(at: url) ?? []).compactMap { FileManager.default.contents(atPath: $0.url.path) }
    }
}

/// A folder's state as the simulator compares it.
struct SimListing: Equatable {
    enum Item: Hashable { case folder, file(String) }
    var items: [String: Item] = [:]
    var stubs: [String] = []
    var temporaries: [String] = []
    var excluded: [String] = []
    var excludedContents: [String] = []

    var files: [String] { items.compactMap { if case .file = $0.value { $0.key } else { nil } }.sorted() }
    var folders: [String] { items.compactMap { if case .folder = $0.value { $0.key } else { nil } }.sorted() }
    var digests: [String] { items.values.compactMap { if case .file(let digest) = $0 { digest } else { nil } } }
}
