// SPDX-License-Identifier: Apache-2.0
import CFuse
import CUbiquityShims
import Dispatch
import Foundation
import Glibc
import Logging
import Synchronization
import UbiquityCore

/// The synced folder served through FUSE (`ubiq daemon --mount`): libfuse3's low-level API on
/// its own threads (never the cooperative pool), mounted over the folder itself. The folder's
/// directory is opened before the mount covers it, and every operation is done relative to
/// that descriptor, so the bytes stay where they were (the folder on disk is the mount's
/// cache) and the daemon's own threads, whose requests are served as they come (the ``MountView/raw``
/// view), sync and index the folder exactly as without a mount, with their paths unchanged.
///
/// Other programs see ``MountView/documents``: an evicted file under its own name with its
/// size; opening it waits for its content (``MountDelegate/materialize(_:)``), except an
/// `O_TRUNC` open, a truncation to nothing or a rename over it, which replace it without
/// downloading (``MountDelegate/replacePlaceholder(_:by:)``).
///
/// Concurrency: the kernel's requests arrive on up to ``Configuration/threads`` libfuse threads
/// at once. The node table and the folder handles are behind locks; each file handle is the
/// descriptor of the file on disk, used by one request at a time per offset as the kernel
/// sends them. Requests that wait for sync block their libfuse thread only.
package final class MountFileSystem: Sendable {
    /// How the mount behaves.
    package struct Configuration: Sendable {
        /// How long the kernel may cache a name and its attributes (seconds). Every change
        /// reaches the folder through the mount, so the kernel's caches stay true; evicted files
        /// are never cached (their view differs by caller).
        package var cacheSeconds: Double = 60
        /// The most libfuse threads serving requests at once.
        package var threads: UInt32 = 64
        /// How long an open of an evicted file waits for its content before failing with EIO.
        package var fetchTimeout: Duration = .seconds(60)
        /// Defaults.
        package init() {}
    }

    /// The mounted folder (absolute).
    package let folder: String
    let configuration: Configuration
    let delegate: any MountDelegate
    let logger: Logger
    /// The folder's directory on disk, opened before the mount covers it.
    let root: Int32
    let nodes = Mutex(MountNodeTable())
    let folders = Mutex(FolderHandles())
    let ownThreads = Mutex<Set<Int32>>([])
    let session = Mutex<SessionPointer?>(nil)
    let finished = DispatchSemaphore(value: 0)
    let invalidations: MountInvalidations
    /// The downloads that open handles read while their bytes arrive, by descriptor.
    let arriving = Mutex<[Int32: ByteArrival]>([:])

    /// A file system for `folder` (an existing folder), not mounted yet.
    /// - Throws: `io` when the folder cannot be opened.
    package init(folder: String, delegate: any MountDelegate, configuration: Configuration = Configuration(), logger: Logger) throws {
        let fd = Glibc.open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw UbiquityError.posix("open", path: folder) }
        self.folder = folder
        self.root = fd
        self.delegate = delegate
        self.configuration = configuration
        self.logger = logger
        invalidations = MountInvalidations()
    }

    deinit { close(root) }

    // MARK: Mounting

    /// Mounts the file system over the folder and starts serving it on its own threads.
    ///
    /// The threads have a file descriptor table of their own (`unshare(CLONE_FILES)`), where
    /// /dev/fuse is open and nowhere else in the process: the daemon's other threads reach the
    /// folder through the mount, and were /dev/fuse open in their table too, a daemon killed
    /// while one of them waits for the mount would never end, and the mount would hang instead
    /// of answering ENOTCONN.
    /// - Throws: `io` when libfuse cannot make the session or mount (no `/dev/fuse`, no
    ///   `fusermount3`, the folder already a mount point).
    package func mount() throws {
        let started = DispatchSemaphore(value: 0)
        let failure = Mutex<UbiquityError?>(nil)
        let folder = self.folder
        let threads = configuration.threads
        let thread = Thread { [self] in
            guard ub_private_descriptors(root) == 0 else {
                failure.withLock { $0 = UbiquityError.posix("unshare", path: folder) }
                started.signal()
                return
            }
            let options = ["ubiq", "-o", "fsname=ubiquity,subtype=ubiquity,default_permissions"]
            var arguments = options.map { strdup($0) }
            defer { arguments.forEach { free($0) } }
            var operations = Self.operations()
            let userdata = Unmanaged.passUnretained(self).toOpaque()
            guard let made = arguments.withUnsafeMutableBufferPointer({ buffer in
                ub_fuse_session_new(Int32(buffer.count), buffer.baseAddress, &operations, userdata)
            }) else {
                failure.withLock { $0 = UbiquityError(.io, "cannot start a FUSE session for '\(folder)' (is libfuse3 installed?)") }
                started.signal()
                return
            }
            guard fuse_session_mount(made, folder) == 0 else {
                fuse_session_destroy(made)
                failure.withLock {
                    $0 = UbiquityError(.io, "cannot mount '\(folder)' with FUSE: is /dev/fuse there and fusermount3 installed (Debian: fuse3)? `ubiq doctor` checks both")
                }
                started.signal()
                return
            }
            session.withLock { $0 = SessionPointer(made) }
            invalidations.start(session: SessionPointer(made))  // its thread shares this table
            FolderChangeFeed.shared.open(folder)  // the mount is the folder's watcher (MountFileSystem+Changes.swift)
            started.signal()
            let result = ub_fuse_loop(made, threads, 4)
            if result != 0 { logger.debug("the FUSE loop ended", metadata: ["ubiquity.result": "\(result)"]) }
            invalidations.stop()
            FolderChangeFeed.shared.close(folder)
            // unmounted already by ``unmount(timeout:)`` (or by hand): libfuse would only complain
            if MountPoint.state(of: folder, probe: false) != .none { fuse_session_unmount(made) }
            fuse_session_destroy(made)
            finished.signal()
        }
        thread.name = "ubiquity-fuse"
        thread.start()
        started.wait()
        if let error = failure.withLock({ $0 }) { throw error }
        logger.info("mounted", metadata: ["ubiquity.folder": "\(folder)"])
    }

    /// Unmounts lazily (programs still in the folder keep their open files, served until they
    /// close them) and waits for the file system's threads to end, at most `timeout`.
    package func unmount(timeout: Duration = .seconds(10)) {
        guard let made = session.withLock({ current -> SessionPointer? in defer { current = nil }; return current }) else { return }
        fuse_session_exit(made.pointer)
        // the kernel ends the connection when the mount goes: the loop's reads return then
        do { try MountPoint.detach(folder) } catch {
            logger.warning("cannot unmount", metadata: ["ubiquity.folder": "\(folder)", "ubiquity.error": "\(error)"])
        }
        let (seconds, _) = timeout.components
        if finished.wait(timeout: .now() + .seconds(Int(seconds))) == .timedOut {
            logger.notice("unmounted; programs still have files of the folder open", metadata: ["ubiquity.folder": "\(folder)"])
            return
        }
        logger.info("unmounted", metadata: ["ubiquity.folder": "\(folder)"])
    }

    // MARK: Who asks

    /// The view of the request's caller: ``MountView/raw`` for the daemon's own threads.
    func view(_ request: fuse_req_t) -> MountView {
        let pid = fuse_req_ctx(request).pointee.pid
        return isOwnThread(pid) ? .raw : .documents
    }

    /// Whether the thread `tid` is one of this process's (the kernel names the calling
    /// thread). Known threads are remembered; others are asked of /proc each time (a thread
    /// started later may take an ID another program had).
    func isOwnThread(_ tid: Int32) -> Bool {
        if tid == getpid() { return true }
        if ownThreads.withLock({ $0.contains(tid) }) { return true }
        guard tid > 0, access("/proc/self/task/\(tid)", F_OK) == 0 else { return false }
        ownThreads.withLock { _ = $0.insert(tid) }
        return true
    }

    // MARK: The folder on disk

    /// A relative path as the *at calls take it ("" is the folder itself).
    static func at(_ path: String) -> String { path.isEmpty ? "." : path }

    /// The stat of `path` on disk, without following a link; nil with errno set.
    func rawStat(_ path: String) -> stat? {
        var st = stat()
        return fstatat(root, Self.at(path), &st, AT_SYMLINK_NOFOLLOW) == 0 ? st : nil
    }

    /// What a path is in a view.
    enum Resolved {
        /// On disk as it is.
        case present(stat)
        /// An evicted file: its stub's stat with the document's size.
        case dataless(stat, Placeholder)
        /// Nothing (errno).
        case missing(Int32)
    }

    /// What `path` is in `view`.
    func resolve(_ path: String, in view: MountView) -> Resolved {
        if let st = rawStat(path) { return .present(st) }
        let error = errno
        guard view == .documents, error == ENOENT, let name = path.split(separator: "/").last, !Placeholder.isStubName(name) else {
            return .missing(error)
        }
        let stub = Placeholder.stubPath(for: path)
        guard var st = rawStat(stub), (st.st_mode & S_IFMT) == S_IFREG,
              let placeholder = Placeholder.read(stubNamed: stub, in: root) else { return .missing(ENOENT) }
        st.st_size = Int(placeholder.size)
        st.st_blocks = 0
        return .dataless(st, placeholder)
    }

    /// Runs `body` on the cooperative pool and waits for it on this (libfuse) thread, at most
    /// `timeout`; its error, or `ETIMEDOUT`'s.
    func wait(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> Void) -> Int32 {
        let outcome = Mutex<Int32?>(nil)
        let done = DispatchSemaphore(value: 0)
        let logger = self.logger
        let task = Task {
            var result: Int32 = 0
            do { try await body() } catch {
                logger.info("the mount's request to sync failed", metadata: ["ubiquity.error": "\(error)"])
                result = Self.errorNumber(for: error)
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = Double(seconds) * 1e9 + Double(attoseconds) / 1e9
        guard done.wait(timeout: .now() + .nanoseconds(Int(min(nanoseconds, 1e15)))) == .success else {
            task.cancel()
            return EIO
        }
        return outcome.withLock { $0 } ?? EIO
    }

    /// The errno a failed request to sync answers with.
    static func errorNumber(for error: any Error) -> Int32 {
        guard let error = error as? UbiquityError else { return EIO }
        switch error.code {
        case .notFound: return ENOENT
        case .permissionDenied: return EACCES
        case .invalidArgument: return EINVAL
        case .alreadyExists: return EEXIST
        default: return EIO
        }
    }
}

/// libfuse's session, shared by the loop's thread and the one that unmounts (libfuse's calls
/// on it are thread-safe where they are used: exit, unmount, notifications).
struct SessionPointer: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
}
