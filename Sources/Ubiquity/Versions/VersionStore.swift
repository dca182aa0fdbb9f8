// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import UbiquityCore

/// Where file versions live, outside every user-visible folder:
///
/// ```
/// <versionsDirectory>/index.json            canonical path → item id (the fallback link)
/// <versionsDirectory>/index.lock            flock serialising index updates
/// <versionsDirectory>/items/<item-id>/manifest.json
/// <versionsDirectory>/items/<item-id>/lock  flock serialising manifest updates
/// <versionsDirectory>/items/<item-id>/<version-id>[.ext]   contents
/// ```
///
/// Lock order: the index lock may be taken first and the item lock inside it, never the reverse.
struct VersionStore: Sendable {
    /// The store's folder.
    let root: String

    init(root: URL) { self.root = CanonicalPath.normalize(root.path) }

    /// The store for this call: ``VersionStoreLocation/override`` when set, else the process's
    /// (``VersionStoreLocation/processDefault``), else `UbiquityPaths().versionsDirectory` read
    /// from the environment now.
    static var current: VersionStore {
        VersionStore(root: VersionStoreLocation.override ?? VersionStoreLocation.processDefault ?? UbiquityPaths().versionsDirectory)
    }

    var itemsPath: String { root + "/items" }
    var indexPath: String { root + "/index.json" }
    var indexLockPath: String { root + "/index.lock" }
    func folder(_ id: String) -> String { itemsPath + "/" + id }
    func manifestPath(_ id: String) -> String { folder(id) + "/manifest.json" }
    func lockPath(_ id: String) -> String { folder(id) + "/lock" }
    func contentPath(_ id: String, file: String) -> String { folder(id) + "/" + file }

    // MARK: Manifests

    /// The manifest of item `id`, or nil when the store has no such item.
    func readManifest(_ id: String) throws -> VersionManifest? {
        guard Self.isIdentifier(id) else { return nil }
        let path = manifestPath(id)
        guard let data = FileManager.default.contents(atPath: path) else {
            if FileManager.default.fileExists(atPath: path) { throw UbiquityError(.io, "cannot read the version manifest '\(path)'") }
            return nil
        }
        return try VersionManifest.decode(data, path: path)
    }

    /// Replaces item's manifest atomically. Call with the item's lock held.
    func writeManifest(_ manifest: VersionManifest) throws {
        try SafeSave.write(try manifest.encoded(), to: manifestPath(manifest.itemID), permissions: 0o600)
    }

    /// Runs `body` holding item `id`'s lock.
    func withItemLock<T>(_ id: String, _ body: () throws -> T) throws -> T {
        try VersionStoreLock.withLock(lockPath(id), body)
    }

    // MARK: The path index

    private struct PathIndex: Codable {
        var format = 1
        var items: [String: String] = [:]
    }

    /// Canonical path → item id; empty when there is no index yet.
    func readIndex() throws -> [String: String] {
        guard let data = FileManager.default.contents(atPath: indexPath) else { return [:] }
        do {
            return try JSONDecoder().decode(PathIndex.self, from: data).items
        } catch {
            throw UbiquityError(.io, "the version path index '\(indexPath)' is damaged; move it aside (items with the 'user.ubiquity.item-id' attribute keep their versions)", underlying: error)
        }
    }

    /// Changes the index under its lock; writes it only if `body` changed it.
    func updateIndex<T>(_ body: (inout [String: String]) throws -> T) throws -> T {
        try UbiquityPaths.ensureDirectory(URL(fileURLWithPath: itemsPath, isDirectory: true))
        return try VersionStoreLock.withLock(indexLockPath) {
            let before = try readIndex()
            var index = before
            let result = try body(&index)
            if index != before {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
                let data: Data
                do { data = try encoder.encode(PathIndex(items: index)) } catch {
                    throw UbiquityError(.io, "cannot encode the version path index", underlying: error)
                }
                try SafeSave.write(data, to: indexPath, permissions: 0o600)
            }
            return result
        }
    }

    // MARK: Item identity

    /// The id of the item at canonical `path` if the store knows it, without changing anything.
    func existingItemID(forPath path: String) -> String? {
        if let id = ItemIdentity.read(at: path), let manifest = try? readManifest(id),
           manifest.path == path || !isCopy(id, recordedPath: manifest.path) {
            return id
        }
        if let id = (try? readIndex())?[path], Self.isIdentifier(id),
           FileManager.default.fileExists(atPath: manifestPath(id)) {
            return id
        }
        return nil
    }

    /// The id of the existing item at canonical `path`, assigned (attribute, index entry, folder
    /// and empty manifest) when it has none yet.
    func itemID(forPath path: String) throws -> String {
        try updateIndex { index in
            var chosen: String?
            let attributeID = ItemIdentity.read(at: path)
            if let id = attributeID, let manifest = try readManifest(id) {
                if manifest.path == path {
                    chosen = id
                } else if !isCopy(id, recordedPath: manifest.path) {
                    // Renamed without telling us (a plain `mv`): the attribute followed it.
                    if index[manifest.path] == id { index.removeValue(forKey: manifest.path) }
                    chosen = id
                }
            }
            if chosen == nil, let id = index[path], Self.isIdentifier(id),
               FileManager.default.fileExists(atPath: manifestPath(id)) {
                chosen = id
                if attributeID != id { ItemIdentity.assign(id, at: path) }
            }
            let id: String
            if let chosen {
                id = chosen
            } else {
                id = UUID().uuidString
                try UbiquityPaths.ensureDirectory(URL(fileURLWithPath: folder(id), isDirectory: true))
                try withItemLock(id) { try writeManifest(VersionManifest(itemID: id, path: path)) }
                ItemIdentity.assign(id, at: path)
            }
            index[path] = id
            return id
        }
    }

    /// Whether the item at some path carrying `id` is a copy: the item recorded for `id` is still
    /// at `recordedPath` with the same attribute (copies made with `cp -a` carry the attribute).
    private func isCopy(_ id: String, recordedPath: String) -> Bool {
        FileStamp.of(recordedPath) != nil && ItemIdentity.read(at: recordedPath) == id
    }

    /// Whether `id` can name a folder of the store (a UUID, so never `..` or a path).
    static func isIdentifier(_ id: String) -> Bool { UUID(uuidString: id) != nil }
}

/// Points the version store somewhere else for the current task (tests use it to keep each test's
/// versions in its own temporary folder without changing the process environment).
package enum VersionStoreLocation {
    /// The versions folder to use instead of `UbiquityPaths().versionsDirectory`, if any.
    @TaskLocal package static var override: URL?

    private static let processWide = Mutex<URL?>(nil)

    /// The versions folder of the whole process where no task sets ``override``: a test process
    /// sets it once, before its first test, so that no test writes into the user's store (work
    /// on other threads, a thread pool's, does not see a task's ``override``). Nil (a daemon, the
    /// CLI): `UbiquityPaths().versionsDirectory`.
    package static var processDefault: URL? {
        get { processWide.withLock { $0 } }
        set { processWide.withLock { $0 = newValue } }
    }
}
