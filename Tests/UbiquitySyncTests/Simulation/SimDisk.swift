// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import UbiquityCore
@testable import UbiquitySync

/// A device's disk with fsync semantics: what a power loss leaves of its folder. The folder is a
/// real one; beside it this keeps what the disk has made durable, as POSIX promises it and no
/// more:
/// - a file's bytes (with its mode and modification time) when the file is fsynced;
/// - a folder's names (which file or folder each one is) when the folder is fsynced;
/// - everything at a `syncfs`.
/// It learns of the engine's fsyncs through ``Durability``, which it also fails now and then
/// (`EIO`), as a failing disk does. A user's change counts as durable at once (the user's
/// programs sync what they save). A power loss (``powerLoss()``) makes the folder what was
/// durable: a file whose name was durable but whose bytes never were comes back empty, a name
/// made or renamed in a folder never synced since is undone, a folder never synced comes back
/// empty. Items keep their identity (inode) where the power loss keeps them.
///
/// Files and folders are known by inode: an inode number the file system reuses for a new
/// file after a delete can give the new file the old one's durable bytes when the new one's
/// name is durable and its bytes are not (a state a real disk cannot reach; not seen to
/// matter).
final class SimDisk: Sendable {
    /// What a durable name in a folder is.
    enum Entry: Equatable, Sendable {
        case file(UInt64)
        case folder(UInt64)
        case link(String)

        /// The inode a file or folder entry names.
        var inode: UInt64? {
            switch self {
            case .file(let inode), .folder(let inode): inode
            case .link: nil
            }
        }
    }

    /// A file's durable bytes.
    struct Content: Sendable {
        var data: Data
        var modified: timespec
        var mode: mode_t
    }

    struct State: Sendable {
        var contents: [UInt64: Content] = [:]
        /// Each folder's durable names (a folder without any: none are).
        var entries: [UInt64: [String: Entry]] = [:]
        /// How many times each call was made (its faults are decided by seed, call and count,
        /// not by the order the engine's threads make them in).
        var calls: [String: Int] = [:]
        /// The share of fsyncs that fail.
        var faultRate = 0.0
        /// Calls a test fails on purpose (`EIO`), besides those.
        var refuse: (@Sendable (Durability.Call) -> Bool)?
        var lives = 0
        var watch: Durability.Watch?
    }

    let folder: String
    private let seed: UInt64
    private let ledger: SimLedger
    let state = Mutex(State())

    /// Starts watching `folder` (which exists, canonical), all of it durable now.
    init(folder: String, seed: UInt64, ledger: SimLedger) {
        self.folder = folder
        self.seed = seed
        self.ledger = ledger
        state.withLock { state in
            captureAll(&state)
            state.watch = Durability.watch(folder) { [weak self] call in self?.told(call) }
        }
    }

    func stop() {
        state.withLock { state in
            if let watch = state.watch { Durability.stop(watch) }
            state.watch = nil
        }
    }

    /// Fails the calls `refuse` says yes to (nil: none).
    func refuse(_ refuse: (@Sendable (Durability.Call) -> Bool)?) {
        state.withLock { $0.refuse = refuse }
    }

    var faultRate: Double {
        get { state.withLock { $0.faultRate } }
        set { state.withLock { $0.faultRate = newValue } }
    }

    // MARK: What becomes durable

    private func told(_ call: Durability.Call) -> Int32? {
        state.withLock { state in
            // a file's bytes, read once: they decide its fault and are what becomes durable
            let data: Data? = if case .file(let path) = call { FileManager.default.contents(atPath: path) } else { nil }
            if fails(call, data: data, &state) {
                ledger.count(.fsyncFailed)
                return EIO
            }
            switch call {
            case .file(let path): captureFile(path, data: data, &state)
            case .folder(let path): captureFolder(path, &state)
            case .fileSystem: captureAll(&state)
            }
            return nil
        }
    }

    /// Whether this call fails: decided by the seed, the device's life, what the call is about
    /// (a file's bytes, a folder's relative path) and how many times that was asked.
    private func fails(_ call: Durability.Call, data: Data?, _ state: inout State) -> Bool {
        if state.refuse?(call) == true { return true }
        guard state.faultRate > 0 else { return false }
        let key: String
        switch call {
        case .file: key = "file " + (data.map(SimLedger.digest) ?? "")
        case .folder(let path): key = "folder " + relative(path)
        case .fileSystem: key = "filesystem"
        }
        let count = state.calls[key, default: 0]
        state.calls[key] = count + 1
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325 ^ seed ^ UInt64(state.lives) << 56
        for byte in "\(key) \(count)".utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return Double(hash % 10_000) / 10_000 < state.faultRate
    }

    private func relative(_ path: String) -> String {
        path == folder ? "" : String(path.dropFirst(folder.count + 1))
    }

    private static func identity(_ path: String) -> (inode: UInt64, info: stat)? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return (UInt64(info.st_ino), info)
    }

    /// Takes the file at `path` as durable with its bytes (`data` when read already).
    private func captureFile(_ path: String, data: Data? = nil, _ state: inout State) {
        guard let (inode, info) = Self.identity(path), info.st_mode & S_IFMT == S_IFREG,
              let data = data ?? FileManager.default.contents(atPath: path) else { return }
        state.contents[inode] = Content(data: data, modified: info.st_mtim, mode: info.st_mode & 0o7777)
    }

    private func entry(_ path: String) -> Entry? {
        guard let (inode, info) = Self.identity(path) else { return nil }
        switch info.st_mode & S_IFMT {
        case S_IFDIR: return .folder(inode)
        case S_IFLNK: return (try? FileManager.default.destinationOfSymbolicLink(atPath: path)).map(Entry.link)
        case S_IFREG: return .file(inode)
        default: return nil
        }
    }

    private func captureFolder(_ path: String, _ state: inout State) {
        guard let (inode, _) = Self.identity(path), let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return }
        var entries: [String: Entry] = [:]
        for name in names {
            entries[name] = entry(path + "/" + name)
            if let named = entries[name] { Self.forgetOtherNames(of: named, keeping: inode, name, &state) }
        }
        state.entries[inode] = entries
    }

    /// An inode has one durable name (neither the engine nor the simulated users make hard
    /// links): a journaling file system makes a rename durable in its old and its new parent at
    /// once, so the model never keeps a folder in two parents (two made a cycle a power loss
    /// followed forever: seed 479); and an inode freed by a removal is taken again only once
    /// the removal is durable, so the old name never comes back with the new item (a folder's
    /// inode taken by a user's new folder, or file: the old name, the engine's folder of
    /// temporaries, came back holding the user's files, or as the user's file: seed 532). Of
    /// an inode of another kind now, what was durable inside it goes too.
    private static func forgetOtherNames(of named: Entry, keeping parent: UInt64, _ name: String, _ state: inout State) {
        guard let inode = named.inode else { return }
        for (other, entries) in state.entries {
            for (otherName, entry) in entries where entry.inode == inode && (other != parent || otherName != name) {
                state.entries[other]?[otherName] = nil
            }
        }
        switch named {
        case .file: state.entries[inode] = nil
        case .folder: state.contents[inode] = nil
        case .link: break
        }
    }

    private func captureAll(_ state: inout State) {
        captureFolder(folder, &state)
        guard let walker = FileManager.default.enumerator(atPath: folder) else { return }
        while let relative = walker.nextObject() as? String {
            let path = folder + "/" + relative
            switch entry(path) {
            case .folder: captureFolder(path, &state)
            case .file: captureFile(path, &state)
            default: break
            }
        }
    }

    /// A user changed these items (relative paths): their names, the names of the folders on
    /// their way, and their bytes (a folder's names, for one made now) are durable as they are.
    func userChanged(_ paths: [String]) {
        state.withLock { state in
            for path in paths where !path.isEmpty {
                var parent = folder
                for component in path.split(separator: "/").map(String.init) {
                    let absolute = parent + "/" + component
                    guard let (inode, _) = Self.identity(parent) else { break }
                    let made = entry(absolute)
                    if let made, state.entries[inode]?[component] != made {
                        // new at this name: moved here, or made with an inode a removed item had,
                        // whose names are not this one's (seed 532)
                        Self.forgetOtherNames(of: made, keeping: inode, component, &state)
                        if case .folder(let child) = made {
                            let present = Set((try? FileManager.default.contentsOfDirectory(atPath: absolute)) ?? [])
                            state.entries[child] = state.entries[child]?.filter { present.contains($0.key) }
                        }
                    }
                    state.entries[inode, default: [:]][component] = made
                    parent = absolute
                }
                let absolute = folder + "/" + path
                switch entry(absolute) {
                case .file: captureFile(absolute, &state)
                case .folder(let inode) where state.entries[inode] == nil: captureFolder(absolute, &state)
                default: break
                }
            }
        }
    }

    /// Everything in the folder is durable as it is now (the folder made again, empty, by a
    /// switch of account).
    func settleAll() {
        state.withLock { state in
            state.contents = [:]
            state.entries = [:]
            captureAll(&state)
        }
    }

    // MARK: The power loss

    /// Makes the folder what the disk had made durable (call with the engine stopped). Returns
    /// how many items changed.
    @discardableResult
    func powerLoss() throws -> Int {
        defer { settleAll() }  // what the disk holds now is all it has: durable
        return try state.withLock { state in
            state.lives += 1
            let fm = FileManager.default
            guard let (root, _) = Self.identity(folder) else { return 0 }
            // 1. every item now in the folder, moved into a pool by inode (children first)
            let pool = folder + ".power-loss"
            try? fm.removeItem(atPath: pool)
            try fm.createDirectory(atPath: pool, withIntermediateDirectories: false)
            defer { try? fm.removeItem(atPath: pool) }
            var pooled: [UInt64: String] = [:]
            var changed = 0
            func empty(_ path: String) throws {
                for name in try fm.contentsOfDirectory(atPath: path) {
                    let child = path + "/" + name
                    guard let (inode, info) = Self.identity(child) else { continue }
                    if info.st_mode & S_IFMT == S_IFDIR { try empty(child) }
                    let place = pool + "/\(inode)-\(pooled.count)"
                    guard rename(child, place) == 0 else { throw UbiquityError.posix("rename", path: child) }
                    if info.st_mode & S_IFMT != S_IFLNK, pooled[inode] == nil { pooled[inode] = place }
                }
            }
            try empty(folder)
            // 2. the durable tree made again, each item from its pooled self when it is there
            var made: Set<UInt64> = []
            func make(_ inode: UInt64, at path: String) throws {
                guard made.insert(inode).inserted else { return }  // (a folder is made once)
                for (name, entry) in (state.entries[inode] ?? [:]).sorted(by: { $0.key < $1.key }) {
                    let target = path + "/" + name
                    switch entry {
                    case .folder(let child):
                        if let place = pooled.removeValue(forKey: child) {
                            guard rename(place, target) == 0 else { throw UbiquityError.posix("rename", path: target) }
                        } else {
                            try fm.createDirectory(atPath: target, withIntermediateDirectories: false)
                            changed += 1
                        }
                        try make(child, at: target)
                    case .file(let child):
                        let content = state.contents[child]
                        let data = content?.data ?? Data()
                        if let place = pooled.removeValue(forKey: child) {
                            guard rename(place, target) == 0 else { throw UbiquityError.posix("rename", path: target) }
                            if fm.contents(atPath: target) != data {
                                // its bytes as durable, in place (the inode stays)
                                chmod(target, 0o600)
                                let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: target))
                                try handle.truncate(atOffset: 0)
                                try handle.write(contentsOf: data)
                                try handle.close()
                                changed += 1
                            }
                        } else {
                            guard fm.createFile(atPath: target, contents: data) else { throw UbiquityError.posix("create", path: target) }
                            changed += 1
                        }
                        if let content {
                            chmod(target, content.mode)
                            var times = [content.modified, content.modified]
                            utimensat(AT_FDCWD, target, &times, AT_SYMLINK_NOFOLLOW)
                        }
                    case .link(let destination):
                        try fm.createSymbolicLink(atPath: target, withDestinationPath: destination)
                    }
                }
            }
            try make(root, at: folder)
            changed += pooled.count  // what no durable name kept
            return changed
        }
    }
}
