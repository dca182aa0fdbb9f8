// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Synchronization
import UbiquityCore
import UbiquityIndex

/// Watches the account file and reports identity changes made by any process: it posts
/// `NSUbiquityIdentityDidChange` and feeds the streams from ``changes()``.
///
/// Watching starts the first time someone reads ``token`` or asks for ``changes()``: the kernel
/// tells of every change of the account file (``FileChangeSignal``: inotify, through the
/// process's one watcher hub; its folder is created, mode 0700, if missing), and the file's
/// stamp is checked then, once more on every read of ``token``, and every ``backstopInterval`` as a backstop (every
/// ``interval`` when the folder cannot be watched). It stops when the monitor is released
/// (``shared`` never is). Notifications and stream elements are delivered in order, on whichever
/// thread noticed the change.
public final class UbiquityIdentityMonitor: Sendable {
    /// The process's monitor, for the process's XDG paths, posting on `NotificationCenter.default`.
    public static let shared = UbiquityIdentityMonitor()

    /// The file watched.
    public let accountFile: UbiquityAccountFile
    /// How often the file is checked when its folder cannot be watched.
    public let interval: Duration
    /// How often the file is checked while the kernel tells of its changes: a backstop for a
    /// watch lost (the folder replaced, the inotify limit), not the way changes are noticed.
    public static let backstopInterval: Duration = .seconds(30)
    private let notificationCenter: NotificationCenter
    private let state = Mutex(State())
    /// The streams of ``changes()``.
    private let identityChanges = Broadcaster<UbiquityIdentityToken?>(bufferingPolicy: .bufferingNewest(64))
    /// The streams of ``accountFileRewrites()``.
    private let rewrites = Broadcaster<Void>(bufferingPolicy: .bufferingNewest(1))
    /// Serialises reads of the file, so that a slow reader cannot overwrite a newer result.
    private let refreshLock = Mutex(())

    /// One timer thread for every monitor, apart from the coordination time-outs' timer, so that
    /// a slow notification observer cannot delay them.
    private static let timer = DeadlineTimer()

    private struct State {
        var started = false
        /// The watch of the account file, while it holds.
        var signal: FileChangeSignal?
        var stamp: FileStamp?
        var token: UbiquityIdentityToken?
        var pending: [UbiquityIdentityToken?] = []
        var delivering = false
    }

    /// A monitor of `paths.accountFile`, posting on `notificationCenter`.
    public init(paths: UbiquityPaths = UbiquityPaths(), notificationCenter: NotificationCenter = .default,
                interval: Duration = .milliseconds(500)) {
        accountFile = UbiquityAccountFile(paths: paths)
        self.notificationCenter = notificationCenter
        self.interval = interval
    }

    /// The signed-in account's token, nil when nobody is signed in. Starts watching.
    public var token: UbiquityIdentityToken? {
        startIfNeeded()
        refresh()
        return state.withLock { $0.token }
    }

    /// A stream of the token after every change (nil: signed out), from now on; it does not
    /// start with the current token (read ``token`` after subscribing). Starts watching. Keep
    /// the monitor alive while iterating: the stream finishes when the monitor is released.
    public func changes() -> AsyncStream<UbiquityIdentityToken?> {
        startIfNeeded()
        return identityChanges.subscribe()
    }

    /// A stream with an element after every rewrite of the account file, whether or not the
    /// identity changed: a new device token for the same account (signing in again) is one, so a
    /// daemon picks up new credentials without a restart. Elements coalesce (the newest one is
    /// kept); read the file after each. Starts watching, and finishes with the monitor.
    public func accountFileRewrites() -> AsyncStream<Void> {
        startIfNeeded()
        return rewrites.subscribe()
    }

    private func startIfNeeded() {
        guard state.withLock({ $0.started }) == false else { return }
        let started = refreshLock.withLock { _ -> Bool in
            let stamp = FileStamp.of(accountFile.url.path)
            let token = accountFile.identityToken
            return state.withLock { state -> Bool in
                guard !state.started else { return false }
                state.started = true
                state.stamp = stamp
                state.token = token
                return true
            }
        }
        guard started else { return }
        let watching = startWatching()
        refresh()  // a change between the first stamp and the watch
        schedulePoll(every: watching ? max(interval, Self.backstopInterval) : interval)
    }

    /// Watches the account file (``FileChangeSignal``); every change of it checks the file.
    private func startWatching() -> Bool {
        guard (try? UbiquityPaths.ensureDirectory(accountFile.url.deletingLastPathComponent())) != nil,
              let signal = FileChangeSignal(path: accountFile.url.path, suffixes: [], logger: Logger(label: "ubiquity.identity"),
                                            onChange: { [weak self] in self?.refresh() }) else { return false }
        state.withLock { $0.signal = signal }
        return true
    }

    private func schedulePoll(every interval: Duration) {
        _ = Self.timer.schedule(after: interval) { [weak self] in
            guard let self else { return }
            self.refresh()
            self.schedulePoll(every: interval)
        }
    }

    /// Re-reads the file if its stamp changed, tells the rewrite streams, and queues a change if
    /// the token differs.
    private func refresh() {
        let (rewritten, changed) = refreshLock.withLock { _ -> (Bool, Bool) in
            let stamp = FileStamp.of(accountFile.url.path)
            guard state.withLock({ $0.stamp != stamp }) else { return (false, false) }
            let token = accountFile.identityToken
            return state.withLock { state -> (Bool, Bool) in
                state.stamp = stamp
                guard state.token != token else { return (true, false) }
                state.token = token
                state.pending.append(token)
                return (true, true)
            }
        }
        if rewritten { rewrites.yield(()) }
        if changed { deliver() }
    }

    /// Delivers queued changes in order; only one thread delivers at a time.
    private func deliver() {
        let owner = state.withLock { state -> Bool in
            if state.delivering { return false }
            state.delivering = true
            return true
        }
        guard owner else { return }
        while true {
            let next = state.withLock { state -> UbiquityIdentityToken?? in
                guard !state.pending.isEmpty else {
                    state.delivering = false
                    return nil
                }
                return .some(state.pending.removeFirst())
            }
            guard let next else { return }
            identityChanges.yield(next)
            notificationCenter.post(name: .NSUbiquityIdentityDidChange, object: nil)
        }
    }
}
