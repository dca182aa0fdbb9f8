// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import UbiquityCore
@testable import UbiquitySync

/// What a run ends with: quiescence (faults off, every device synced until nothing changes),
/// then the invariants, the trace hash and the coverage.
struct SimReport: Sendable {
    var seed: UInt64
    /// The world it ran in.
    var model: SimWorld.Model
    /// SHA-256 of the trace and the final state: the same seed gives the same hash.
    var traceHash: String
    /// What went wrong (empty: the run passed).
    var failures: [String]
    var coverage: [SimCoverage: Int]
    /// Rounds of passes (every device once) quiescence took.
    var roundsToQuiescence: Int
    /// The world's time the run covered, in seconds.
    var virtualSeconds: Double
    var steps: Int
    var faults: [SimFault: Int]
    var trace: [String]
}

extension SimWorld {
    /// The most rounds of passes (each device once) quiescence may take.
    static let quiescenceRounds = 6

    /// Every account's live records, each as its ID, change tag and path (sorted): what a round
    /// of passes changed on the server.
    func serverVersions() async throws -> [String] {
        var versions: [String] = []
        for account in Set(devices.map(\.account)).sorted() {
            let items = try await server.items(token: try await server.token(for: account))
            versions += items.map { "\(account) \($0.id) \($0.changeTag ?? "") \($0.path)" }
        }
        return versions.sorted()
    }

    /// Turns the faults off, brings every evicted file back, syncs every device until a round
    /// changes nothing, then checks the invariants.
    func finish(start: Double) async throws -> SimReport {
        var failures: [String] = []
        for device in devices {
            await device.network.flush()
            device.network.state.withLock { state in
                state.faultRate = 0
                state.crashAt = nil
                state.pauseAt = nil
            }
            if device.network.state.withLock({ $0.dead }) { try await device.restart() }
            device.disk.faultRate = 0
            await device.engine.setNewFilesFault(nil)
            await device.engine.setAfterWrite(nil)
        }
        var previous: [SimListing]?
        var previousServer: [String]?
        var rounds = 0
        var quiet = false
        while rounds < Self.quiescenceRounds, !quiet {
            rounds += 1
            var failed: [String] = []
            for device in devices {
                do { try await device.engine.pass() } catch { failed.append("\(device.name): \(error)") }
                if !device.listing().stubs.isEmpty { _ = try? await device.engine.startDownloading(device.folder.path) }
                if let watched = ProcessInfo.processInfo.environment["UBIQUITY_SIM_WATCH"] {
                    log("quiescence round \(rounds), \(device.name) passed: \(watched) is at \(whereIs(watched))")
                }
            }
            let listings = devices.map { $0.listing() }
            // the server's records too: a round whose only change was an upload of what a
            // device had on its disk already left the listings as they were, and the device
            // that had not fetched it yet was never asked to (seed 9773)
            let server = try await serverVersions()
            quiet = failed.isEmpty && listings == previous && server == previousServer
            if rounds == Self.quiescenceRounds, !failed.isEmpty { failures.append("passes still fail at quiescence: \(failed)") }
            previous = listings
            previousServer = server
        }
        if !quiet { failures.append("no quiescence after \(Self.quiescenceRounds) rounds of passes") }

        let listings = devices.map { $0.listing() }
        // each device against its account's items (a device may have switched account)
        var items: [RemoteItem] = []
        for account in Set(devices.map(\.account)).sorted() {
            let group = devices.indices.filter { devices[$0].account == account }
            let accountItems = try await server.items(token: try await server.token(for: account))
            failures += Self.compare(group.map { listings[$0] }, accountItems, devices: group.map { devices[$0] })
            failures += Self.orphans(group.map { listings[$0] }, accountItems, names: group.map { devices[$0].name })
            items += accountItems
        }
        var present = Set<String>()
        for (device, listing) in zip(devices, listings) {
            present.formUnion(listing.digests)
            present.formUnion(listing.excludedContents)
            present.formUnion(device.versionDigests(listing))
            present.formUnion(device.keptAsideDigests())  // a switch of account keeps the documents aside
        }
        present.formUnion(try await keptAsideOnTheServer())
        for lost in ledger.lost(present: present) { failures.append("write lost: \(lost)") }
        if ProcessInfo.processInfo.environment["UBIQUITY_SIM_DUMP"] != nil {  // the end state, for debugging a failure (printed: the trace's hash stays the run's)
            for (device, listing) in zip(devices, listings) {
                print("end: \(device.name) (\(device.account)): \(listing.items.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" })")
            }
            for item in items { print("end: server \(item.id.prefix(8)) \(item.path) \(item.contentHash.prefix(12))") }
        }

        var hasher = SHA256()
        for line in ledger.trace { hasher.update(data: Data((line + "\n").utf8)) }
        for item in items { hasher.update(data: Data("\(item.path) \(item.kind) \(item.contentHash)\n".utf8)) }
        let hash = Hex.encode(hasher.finalize())
        let faults = devices.reduce(into: [SimFault: Int]()) { all, device in
            for (fault, count) in device.network.state.withLock({ $0.faults }) { all[fault, default: 0] += count }
        }
        return SimReport(seed: seed, model: model, traceHash: hash, failures: failures, coverage: ledger.coverage, roundsToQuiescence: rounds,
                         virtualSeconds: time - start, steps: step, faults: faults, trace: ledger.trace)
    }

    /// The contents of the evicted files kept aside by switches of account: a stub kept aside
    /// stands for the record of the old account that the server still has, at that version
    /// (a switch deletes nothing there; seed 206 counted such a content as lost).
    func keptAsideOnTheServer() async throws -> Set<String> {
        let stubs = devices.flatMap { $0.keptAsideStubs() }
        guard !stubs.isEmpty else { return [] }
        var found = Set<String>()
        for user in SimServer.users {
            for record in try await server.records(token: try await server.token(for: user)) {
                guard let item = SyncRecord.item(from: record), stubs.contains(where: { $0.id == item.id && $0.hash == item.contentHash }) else { continue }
                let file = FileManager.default.temporaryDirectory.appendingPathComponent("ubq-sim-kept-\(UUID().uuidString)").path
                defer { unlink(file) }
                try await SyncEngine.writeContent(of: record, inline: SyncRecord.Field.inline, asset: SyncRecord.Field.content, to: file)
                found.insert(try SyncFiles.hashFile(file))
            }
        }
        return found
    }

    /// Every device's folder equals the server's items (excluded items, which stay on their
    /// device, and what is under them left out everywhere). A large file's record may hold a
    /// chunk-list hash: the local file is hashed that way to compare.
    static func compare(_ listings: [SimListing], _ items: [RemoteItem], devices: [SimDevice]) -> [String] {
        let excluded = Set(listings.flatMap(\.excluded))
        func isExcluded(_ path: String) -> Bool {
            excluded.contains { path == $0 || path.hasPrefix($0 + "/") }
        }
        var server: [String: SimListing.Item] = [:]
        for item in items where !isExcluded(item.path) {
            server[item.path] = item.kind == .folder ? .folder : .file(item.contentHash)
        }
        var failures: [String] = []
        for (device, listing) in zip(devices, listings) {
            let name = device.name
            var local = listing.items.filter { !isExcluded($0.key) }
            for (path, item) in local {
                guard case .file(let expected)? = server[path], item != .file(expected),
                      let hash = try? SyncFiles.hashFile(device.url(path).path, like: expected), hash == expected else { continue }
                local[path] = .file(expected)
            }
            guard local != server else { continue }
            let missing = server.keys.filter { local[$0] == nil }.sorted()
            let extra = local.keys.filter { server[$0] == nil }.sorted()
            let different = local.keys.filter { server[$0] != nil && server[$0] != local[$0] }.sorted()
                .map { "\($0) (here \(local[$0].map(Self.short) ?? ""), server \(server[$0].map(Self.short) ?? ""))" }
            failures.append("\(name) differs from the server: missing \(missing), extra \(extra), different \(different)")
        }
        return failures
    }

    static func short(_ item: SimListing.Item) -> String {
        switch item {
        case .folder: "folder"
        case .file(let digest): String(digest.prefix(10))
        }
    }

    /// Nothing left behind: no temporaries or stubs in the folders, no two items with one path
    /// and no item whose folder is gone on the server.
    static func orphans(_ listings: [SimListing], _ items: [RemoteItem], names: [String]) -> [String] {
        var failures: [String] = []
        for (name, listing) in zip(names, listings) {
            if !listing.temporaries.isEmpty { failures.append("\(name) has temporaries left: \(listing.temporaries)") }
            if !listing.stubs.isEmpty { failures.append("\(name) has evicted files after downloading everything: \(listing.stubs)") }
        }
        let paths = items.map(\.path)
        let duplicates = Dictionary(grouping: paths, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
        if !duplicates.isEmpty { failures.append("the server has two items at \(duplicates)") }
        let folders = Set(items.filter { $0.kind == .folder }.map(\.path))
        for path in paths {
            let parent = (path as NSString).deletingLastPathComponent
            if !parent.isEmpty, !folders.contains(parent) { failures.append("the server's \(path) has no folder \(parent)") }
        }
        return failures
    }

    /// A whole run of `seed`: `steps` steps on `deviceCount` devices, then ``finish(start:)``.
    static func run(seed: UInt64, steps: Int = 60, deviceCount: Int? = nil, model: Model = .current) async throws -> SimReport {
        let world = try await SimWorld(seed: seed, deviceCount: deviceCount ?? (seed % 3 == 0 ? 3 : 2), model: model)
        let start = world.time
        do {
            try await world.run(steps: steps)
            let report = try await world.finish(start: start)
            await world.stop()
            return report
        } catch {
            await world.stop()
            throw SimAbort(seed: seed, error: error, trace: world.ledger.trace)
        }
    }
}

/// A run the world could not go on with (a step or a pass threw): the error, and the trace up
/// to it, so that the seed can be replayed and read like a failed one.
struct SimAbort: Error, CustomStringConvertible {
    var seed: UInt64
    var error: any Error
    var trace: [String]

    var description: String {
        "seed \(seed) stopped: \(error)\ntrace:\n" + trace.suffix(40).joined(separator: "\n")
    }
}
