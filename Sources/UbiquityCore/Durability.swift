// SPDX-License-Identifier: Apache-2.0
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The calls that make what Ubiquity writes durable: `fsync` of a file, `fsync` of a folder (the
/// names made, renamed or removed in it), `syncfs` of a file system. What a power loss keeps is
/// what went through one of them, so every such call goes through here, where a test can watch
/// it: the sync simulator keeps each device's folder as a power loss would leave it, and fails
/// some of the calls as a failing disk would.
package enum Durability {
    /// A call about to be made.
    package enum Call: Sendable, Equatable {
        /// `fsync` of the file at this path.
        case file(String)
        /// `fsync` of the folder at this path.
        case folder(String)
        /// `syncfs` of the file system holding the folder at this path.
        case fileSystem(String)

        /// The path the call is about.
        package var path: String {
            switch self {
            case .file(let path), .folder(let path), .fileSystem(let path): path
            }
        }
    }

    /// Told of each call about a path under the folder it watches, before the call; returns
    /// an `errno` to fail the call with (nothing is made durable then), or nil.
    package typealias Watcher = @Sendable (Call) -> Int32?

    /// A watcher's registration, to end it with.
    package struct Watch: Sendable, Hashable {
        fileprivate let id: UInt64
    }

    private struct Watchers {
        var next: UInt64 = 0
        var all: [(watch: Watch, folder: String, watcher: Watcher)] = []
    }

    private static let watchers = Mutex(Watchers())

    /// Watches the calls about `folder` and what is under it (tests).
    package static func watch(_ folder: String, _ watcher: @escaping Watcher) -> Watch {
        watchers.withLock { state in
            state.next += 1
            let watch = Watch(id: state.next)
            state.all.append((watch, folder, watcher))
            return watch
        }
    }

    /// Ends a watch.
    package static func stop(_ watch: Watch) {
        watchers.withLock { state in state.all.removeAll { $0.watch == watch } }
    }

    /// The errno a watcher fails `call` with, if one does (with none registered, one lock taken).
    private static func refusal(_ call: Call) -> Int32? {
        let path = call.path
        let matching = watchers.withLock { state in
            state.all.filter { path == $0.folder || path.hasPrefix($0.folder + "/") }.map(\.watcher)
        }
        for watcher in matching {
            if let code = watcher(call) { return code }
        }
        return nil
    }

    /// fsyncs the open file `fd`, the file at `path`: its bytes and attributes are durable (its
    /// name is when its folder is synced: ``syncFolder(_:)``).
    /// - Throws: the `fsync` error (`EIO`: what was written may be lost).
    package static func syncFile(_ fd: Int32, path: String) throws {
        if let code = refusal(.file(path)) { throw UbiquityError.posix("fsync", path: path, errno: code) }
        guard fsync(fd) == 0 else { throw UbiquityError.posix("fsync", path: path) }
    }

    /// Opens the file at `path` and fsyncs it (``syncFile(_:path:)``).
    package static func syncFile(at path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw UbiquityError.posix("open", path: path) }
        defer { close(fd) }
        try syncFile(fd, path: path)
    }

    /// fsyncs the folder at `path`: the names made, renamed or removed in it are durable.
    /// - Throws: the `open` or `fsync` error.
    package static func syncFolder(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw UbiquityError.posix("open", path: path) }
        defer { close(fd) }
        if let code = refusal(.folder(path)) { throw UbiquityError.posix("fsync", path: path, errno: code) }
        guard fsync(fd) == 0 else { throw UbiquityError.posix("fsync", path: path) }
    }

    private typealias SyncFS = @convention(c) (Int32) -> Int32
    private static let syncfsCall: SyncFS? = {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "syncfs") else { return nil }
        return unsafeBitCast(symbol, to: SyncFS.self)
    }()

    /// Flushes the whole file system holding the folder `path` (`syncfs`): everything written
    /// on it, bytes and names, is durable. False when that is not possible or failed (the
    /// caller syncs each file then).
    package static func syncFileSystem(containing path: String) -> Bool {
        guard let call = syncfsCall else { return false }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        if refusal(.fileSystem(path)) != nil { return false }
        return call(fd) == 0
    }
}
