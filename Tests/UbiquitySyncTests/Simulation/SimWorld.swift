// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Logging
import Ubiquity
import UbiquityCloudKit
import UbiquityCore
@testable import UbiquitySync

/// One simulated run: two or three devices of one user (a device may switch to the server's
/// other user and back) and the real server, driven by a seeded plan of steps (users' edits,
/// moves, deletes, case-only renames, editor saves, evictions, exclusion toggles, passes,
/// crashes and power losses, network and disk faults, failed fsyncs, clock skew, sign-ins),
/// some of them in the middle of a pass; then quiescence, then the invariants
/// (SimWorld+Invariants.swift).
/// Everything the run decides comes from the seed, and the world's time is virtual (file times
/// are set from it), so a seed replays the same run: the trace hash says so.
final class SimWorld {
    /// What the world can do. Seeds that found bugs before a kind of fault existed replay in the
    /// world they found them in (their runs, step for step); every batch runs the current one.
    enum Model: Sendable {
        /// Crashes lose nothing written (the process dies, the disk keeps all), fsyncs never
        /// fail, no user edits a file as its download lands, and nobody signs in again (the
        /// regressions up to 302).
        case withoutPowerLoss
        /// Half the crashes are power losses (``SimDisk``), 2% of the engines' fsyncs fail, a
        /// user may edit a file as its download lands, and users sign in again, to their
        /// account or another (``signIn(_:)``).
        case current

        /// Its name in `UBIQUITY_SIM_MODEL`.
        var name: String {
            switch self {
            case .withoutPowerLoss: "without-power-loss"
            case .current: "current"
            }
        }
    }

    let model: Model
    let seed: UInt64
    let directory: URL
    let server: SimServer
    let ledger: SimLedger
    private(set) var devices: [SimDevice] = []
    var random: SeededRandom
    /// Whether a crash is a power loss (its own stream, so the plan of steps stays the seed's).
    private var powerRandom: SeededRandom
    /// When a user signs in again, on which device, to which account (its own stream too).
    private var accountRandom: SeededRandom
    /// The world's clock (seconds since 1970), moved by the steps, never by the wall clock.
    var time: Double = 1_750_000_000
    var step = 0
    /// Folder moves so far (device, folder, into): a move of Y into X on one device and of X
    /// into Y on another is a move cycle.
    var folderMoves: [(device: Int, from: String, into: String)] = []
    let token: String

    static let folders = ["", "docs", "docs/old", "media"]
    static let names = ["a.txt", "b.txt", "Notes.md", "c.bin"]

    init(seed: UInt64, deviceCount: Int, model: Model = .current) async throws {
        self.seed = seed
        self.model = model
        random = SeededRandom(seed: seed)
        powerRandom = SeededRandom(seed: seed ^ 0x9077_e4)
        accountRandom = SeededRandom(seed: seed ^ 0xacc0_0e7)
        directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ubq-sim-\(seed)-\(UUID().uuidString.prefix(6))")
        var logger = Logger(label: "test.simulation")
        logger.logLevel = ProcessInfo.processInfo.environment["UBIQUITY_TEST_SYNC_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
        ledger = SimLedger(seed: seed)
        server = try await SimServer(directory: directory, logger: logger)
        token = try await server.token()
        for number in 0..<deviceCount {
            let name = ["A", "B", "C"][number]
            devices.append(try await SimDevice(name: name, number: number, directory: directory, server: server, seed: seed,
                                               ledger: ledger, editsDuringDownloads: model == .current, logger: logger))
            devices[number].disk.faultRate = model == .current ? Self.fsyncFaultRate : 0
        }
    }

    /// The share of the engines' fsyncs that fail (until quiescence).
    static let fsyncFaultRate = 0.02

    func stop() async {
        for device in devices {
            device.disk.stop()
            device.index.shutdown()
        }
        await server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    // MARK: Randomness

    func below(_ bound: Int) -> Int { Int(random.next() % UInt64(max(1, bound))) }
    func chance(_ p: Double) -> Bool { Double(random.next() % 10_000) / 10_000 < p }
    func pick<T>(_ items: [T]) -> T? { items.isEmpty ? nil : items[below(items.count)] }

    func log(_ line: String) { ledger.log("\(step) \(line)") }

    /// A new content: which step and device wrote it, and filler (now and then past the inline
    /// limit, so that it travels as an asset).
    func content(_ device: SimDevice) -> Data {
        var data = Data("seed \(seed) step \(step) on \(device.name)\n".utf8)
        let size = chance(0.12) ? Int(SyncRecord.inlineLimit) + 1 + below(24 << 10) : below(300)
        data.reserveCapacity(data.count + size)
        for index in 0..<size { data.append(UInt8(truncatingIfNeeded: index &* 131 &+ step)) }
        return data
    }

    // MARK: Steps

    /// The kinds of step, with their weights.
    enum Step: CaseIterable {
        case write, append, editorSave, delete, move, caseRename, makeFolder, deleteFolder, moveFolder
        case pass, crash, evict, download, exclude, network, skew

        var weight: Int {
            switch self {
            case .write: 20
            case .append: 5
            case .editorSave: 5
            case .delete: 6
            case .move: 6
            case .caseRename: 3
            case .makeFolder: 3
            case .deleteFolder: 2
            case .moveFolder: 3
            case .pass: 28
            case .crash: 2
            case .evict: 3
            case .download: 2
            case .exclude: 2
            case .network: 3
            case .skew: 1
            }
        }

        /// What a user does to files, which may happen while a pass of the device is paused.
        var isLocal: Bool { [.write, .append, .editorSave, .delete, .move, .caseRename, .makeFolder, .deleteFolder, .moveFolder].contains(self) }
    }

    func nextStep(localOnly: Bool) -> Step {
        let steps = Step.allCases.filter { !localOnly || $0.isLocal }
        var roll = below(steps.reduce(0) { $0 + $1.weight })
        for step in steps {
            if roll < step.weight { return step }
            roll -= step.weight
        }
        return .pass
    }

    /// Runs `count` steps.
    func run(steps count: Int) async throws {
        for _ in 0..<count {
            step += 1
            time += 0.5 + Double(below(2000)) / 1000
            guard let device = pick(devices) else { return }
            if model == .current, Double(accountRandom.next() % 10_000) / 10_000 < Self.signInRate {
                try await signIn(devices[Int(accountRandom.next() % UInt64(devices.count))])
            }
            try await perform(nextStep(localOnly: false), on: device)
            if let watched = ProcessInfo.processInfo.environment["UBIQUITY_SIM_WATCH"] { log("  \(watched) is at \(whereIs(watched))") }
        }
    }

    /// Where a content (digest prefix) is now: files and versions on each device (debugging a
    /// lost write: `UBIQUITY_SIM_WATCH=PREFIX` logs it after every step).
    func whereIs(_ prefix: String) -> [String] {
        devices.flatMap { device -> [String] in
            let listing = device.listing()
            var places = listing.items.compactMap { path, item -> String? in
                if case .file(let digest) = item, digest.hasPrefix(prefix) { "\(device.name):\(path)" } else { nil }
            }
            for path in listing.files {
                for data in SimDevice.versionContents(of: device.url(path)) where SimLedger.digest(data).hasPrefix(prefix) {
                    places.append("\(device.name):\(path) (version)")
                }
            }
            if listing.excludedContents.contains(where: { $0.hasPrefix(prefix) }) { places.append("\(device.name):(skip-backup)") }
            return places.sorted()
        }
    }

    func perform(_ kind: Step, on device: SimDevice, duringPassOf busy: SimDevice? = nil) async throws {
        switch kind {
        case .pass: try await pass(device, busy: busy)
        case .crash:
            ledger.count(.crashIdle)
            try await crash(device)
        case .evict: await evict(device)
        case .download: await download(device)
        case .network:
            let rate = [0, 0, 0.1, 0.3, 1][below(5)]
            device.network.state.withLock { $0.faultRate = rate }
            log("\(device.name) network faults \(rate)")
        case .skew:
            device.skew = Double(below(7200)) - 3600
            log("\(device.name) clock skew \(device.skew)")
        case .exclude: toggleExclusion(device)
        default: device.disk.userChanged(try await localChange(kind, on: device))
        }
    }

    /// The share of steps before which a user signs in again on some device (current model).
    static let signInRate = 0.015

    /// A user signs in again: on a device of the main account, to it again (a new device token)
    /// or to the other account; on a device of the other account, back to the main one. A switch
    /// keeps the folder's documents aside, as `AccountSync` does (``SimDevice/signIn(as:)``).
    func signIn(_ device: SimDevice) async throws {
        let user = device.account != "mei" ? "mei" : accountRandom.next() % 2 == 0 ? "mei" : "ren"
        let previous = device.account
        let kept = try await device.signIn(as: user)
        ledger.count(user == previous ? .signInAgain : .accountSwitch)
        log("\(device.name) signs in as \(user)" + (user == previous ? " again" : ", \(previous)'s documents kept aside")
            + (kept.map { " (\($0.lastPathComponent))" } ?? ""))
    }

    /// The device dies and starts again: half the time by a power loss, which takes from its
    /// folder what its disk had not made durable.
    func crash(_ device: SimDevice, midPass: Bool = false) async throws {
        let powerLoss = model == .current && Double(powerRandom.next() % 10_000) / 10_000 < 0.5
        let changed = try await device.restart(powerLoss: powerLoss)
        if powerLoss { ledger.count(.powerLoss) }
        log("\(device.name) " + (midPass ? "pass: crashed" : "crashes") + (powerLoss ? " by a power loss (\(changed) items changed)" : "") + ", starts again")
    }

    /// A pass of `device`: now and then it dies at one of its requests, or pauses at one while
    /// the world does other things (users' edits anywhere, another device's pass).
    func pass(_ device: SimDevice, busy: SimDevice?) async throws {
        let crashAt = chance(0.06) ? 1 + below(6) : nil
        let pauseAt = busy == nil && crashAt == nil && chance(0.3) ? 1 + below(4) : nil
        device.network.state.withLock { state in
            state.passStart = state.count
            state.crashAt = crashAt
            state.pauseAt = pauseAt
        }
        let engine = device.engine
        let (events, listener) = AsyncStream<SimPassEvent>.makeStream()
        device.network.gate.listen(listener)
        let running = Task {
            do { try await engine.pass(); listener.yield(.finished(nil)) } catch { listener.yield(.finished(error)) }
        }
        let faultsBefore = device.network.state.withLock { $0.faults.values.reduce(0, +) }
        var outcome: (any Error)?
        var interrupted: (any Error)?
        for await event in events {
            if case .paused(let request) = event {
                ledger.count(.pausedMidPass)
                log("\(device.name) pass paused at request \(request)")
                do {
                    for _ in 0..<(1 + below(3)) {
                        step += 1
                        let other = pick(devices) ?? device
                        let kind = other === device || chance(0.6) ? nextStep(localOnly: true) : .pass
                        try await perform(kind, on: other, duringPassOf: device)
                    }
                } catch {
                    interrupted = error  // the pass is let go first: it never waits forever
                }
                device.network.gate.resume()
            } else if case .finished(let error) = event {
                outcome = error
                break
            }
        }
        device.network.gate.listen(nil)
        _ = await running.value
        if let interrupted { throw interrupted }
        if device.network.state.withLock({ $0.faults.values.reduce(0, +) }) > faultsBefore { ledger.count(.networkFault) }
        let dead = device.network.state.withLock { $0.dead }
        if dead {
            if crashAt != nil { ledger.count(.crashMidPass) }
            try await crash(device, midPass: true)
        } else {
            log("\(device.name) pass: " + (outcome.map { "failed (\(Self.kind(of: $0)))" } ?? "ok"))
        }
        device.network.state.withLock { state in
            state.crashAt = nil
            state.pauseAt = nil
        }
    }

    /// An error's kind for the trace (its text names temporaries and IDs).
    static func kind(of error: any Error) -> String {
        if let error = error as? UbiquityError { return "\(error.code)" }
        if let error = error as? CloudKitError { return "\(error.code)" }
        return String(describing: type(of: error))
    }

    func evict(_ device: SimDevice) async {
        guard let path = pick(device.listing().files) else { return }
        // edited since it was synced: its bytes are not the server's
        let server = (try? await self.server.items(token: token).first { $0.path == path }?.contentHash) ?? nil
        // (of the server's kind: a chunk-list checksum for one sent as an asset)
        let edited = device.read(path) == nil ? false : server.map { (try? SyncFiles.hashFile(device.url(path).path, like: $0)) != $0 } ?? true
        do {
            _ = try await device.engine.evict(device.url(path).path)
            if edited { ledger.count(.evictWhileEdited) }
            log("\(device.name) evict \(path): ok")
        } catch {
            if edited { ledger.count(.evictWhileEdited) }
            log("\(device.name) evict \(path): refused (\(Self.kind(of: error)))")
        }
    }

    func download(_ device: SimDevice) async {
        guard !device.listing().stubs.isEmpty else { return }
        ledger.count(.downloadEvicted)
        do {
            let done = try await device.engine.startDownloading(device.folder.path)
            log("\(device.name) download evicted: \(done.count)")
        } catch {
            log("\(device.name) download evicted: failed (\(Self.kind(of: error)))")
        }
    }

    func toggleExclusion(_ device: SimDevice) {
        let listing = device.listing()
        guard let path = pick(listing.files + listing.folders + listing.excluded) else { return }
        let excluded = (try? BackupExclusion.isExcluded(device.url(path).path)) ?? false
        guard (try? BackupExclusion.setExcluded(!excluded, device.url(path).path)) != nil else { return }
        ledger.count(.exclusionToggled)
        log("\(device.name) \(excluded ? "includes" : "excludes") \(path)")
    }
}
