// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import UbiquityCore
import UbiquityMount
import UbiquitySync

/// `ubiq daemon --mount`: the synced folder served through FUSE, over itself (``MountFileSystem``).
struct FolderMount: Sendable {
    let fileSystem: MountFileSystem
    /// The folder's lock taken on disk before the mount covers it: a daemon started later on
    /// the folder meets the mount (and this daemon's engine's lock through it).
    let diskLock: FolderLock

    /// Mounts `folder` (made if missing): a stale mount of a killed daemon is cleared first; a
    /// folder another daemon syncs or serves is refused.
    /// - Throws: `alreadyExists` when another daemon serves or syncs the folder; `io` when
    ///   FUSE is missing or the mount fails.
    static func mount(folder requested: String, sync: AccountSync, fetchTimeout: Duration, logger: Logger) throws -> FolderMount {
        // a stale mount first: nothing can be looked up at it (ENOTCONN) until it is cleared
        if MountPoint.state(of: requested) == .ubiquity(live: false) {
            logger.notice("clearing the stale mount of a daemon that was stopped", metadata: ["ubiquity.folder": "\(requested)"])
            try MountPoint.detach(requested)
        }
        try FileManager.default.createDirectory(atPath: requested, withIntermediateDirectories: true)
        let folder = try CanonicalPath.canonicalize(requested, resolveLast: true)
        switch MountPoint.state(of: folder) {
        case .none: break
        case .ubiquity(live: true):
            throw UbiquityError(.alreadyExists, "'\(folder)' is already mounted by another ubiq daemon; stop it first")
        case .ubiquity(live: false):
            logger.notice("clearing the stale mount of a daemon that was stopped", metadata: ["ubiquity.folder": "\(folder)"])
            try MountPoint.detach(folder)
        case .other(let type):
            throw UbiquityError(.alreadyExists, "'\(folder)' is a mount point already (\(type)); --mount needs a plain folder")
        }
        let lock = try FolderLock(path: folder + "/.ubiquity-sync.lock")
        var configuration = MountFileSystem.Configuration()
        configuration.fetchTimeout = fetchTimeout
        let fileSystem = try MountFileSystem(folder: folder, delegate: SyncMountDelegate(sync: sync), configuration: configuration, logger: logger)
        try fileSystem.mount()
        return FolderMount(fileSystem: fileSystem, diskLock: lock)
    }

    /// Unmounts (after sync stopped).
    func unmount() { fileSystem.unmount() }
}

/// The mount's requests to the folder's sync engine.
struct SyncMountDelegate: MountDelegate {
    let sync: AccountSync

    private func engine() async throws -> SyncEngine {
        guard let engine = await sync.currentEngine else {
            throw UbiquityError(.serviceUnavailable, "the folder is not synced now (no account signed in)")
        }
        return engine
    }

    func materialize(_ path: String) async throws {
        let engine = try await engine()
        _ = try await engine.startDownloading(engine.folder + "/" + path)
    }

    func stream(_ path: String) async throws -> ByteArrival {
        let engine = try await engine()
        return try engine.streamEvicted(engine.folder + "/" + path)
    }

    func replacePlaceholder(_ path: String, by replace: @escaping @Sendable () throws -> Void) async throws {
        let engine = try await engine()
        try await engine.replacePlaceholder(engine.folder + "/" + path, by: replace)
    }
}
