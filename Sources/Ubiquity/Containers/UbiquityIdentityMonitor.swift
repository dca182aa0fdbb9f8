// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization

/// Watches the account file and reports identity changes made by any process: it posts
/// `NSUbiquityIdentityDidChange` and feeds the streams from ``changes()``.
///
/// Watching starts the first time someone reads ``token`` or asks for ``changes()``: the
/// account file's stamp is then checked every ``interval`` on a background timer thread, and
/// once more on every read of ``token``. It stops when the monitor is released (``shared`` never
/// is). Notifications and stream elements are delivered in order, on whichever thread noticed
/// the change.
public final class UbiquityIdentityMonitor: Sendable {
    /// The process's monitor, for the process's XDG paths, posting on `NotificationCenter.default`.
    public static let shared = UbiquityIdentityMonitor()

    /// The file watched.
    public let accountFile: UbiquityAccountFile
    /// How often the file is checked once watching has started.
    public let interval: Duration
    private let notificationCenter: NotificationCenter
    private let state = Mutex(State())
    /// Serialises reads of the file, so that a slow reader cannot overwrite a newer result.
    private let refreshLock = Mutex(())

    /// One timer thread for every monitor, apart from the coordination time-outs' timer, so that
    /// a slow notification observer cannot delay them.
    private static let timer = DeadlineTimer()

    private struct State {
        var started = false
        var stamp: FileStamp?
        var token: UbiquityIdentityToken?
        var continuations: [UInt64: AsyncStream<UbiquityIdentityToken?>.Continuation] = [:]
        var nextContinuation: UInt64 = 0
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

    deinit {
        for continuation in state.withLock({ $0.continuations.values }) { continuation.finish() }
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
        let (stream, continuation) = AsyncStream.makeStream(of: UbiquityIdentityToken?.self,
                                                            bufferingPolicy: .bufferingNewest(64))
        let id = state.withLock { state -> UInt64 in
            state.nextContinuation += 1
            state.continuations[state.nextContinuation] = continuation
            return state.nextContinuation
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
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
        if started { schedulePoll() }
    }

    private func schedulePoll() {
        _ = Self.timer.schedule(after: interval) { [weak self] in
            guard let self else { return }
            self.refresh()
            self.schedulePoll()
        }
    }

    /// Re-reads the file if its stamp changed and queues a change if the token differs.
    private func refresh() {
        let changed = refreshLock.withLock { _ -> Bool in
            let stamp = FileStamp.of(accountFile.url.path)
            guard state.withLock({ $0.stamp != stamp }) else { return false }
            let token = accountFile.identityToken
            return state.withLock { state -> Bool in
                state.stamp = stamp
                guard state.token != token else { return false }
                state.token = token
                state.pending.append(token)
                return true
            }
        }
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
            let next = state.withLock { state -> (UbiquityIdentityToken?, [AsyncStream<UbiquityIdentityToken?>.Continuation])? in
                guard !state.pending.isEmpty else {
                    state.delivering = false
                    return nil
                }
                return (state.pending.removeFirst(), Array(state.continuations.values))
            }
            guard let (token, continuations) = next else { return }
            for continuation in continuations { continuation.yield(token) }
            notificationCenter.post(name: .NSUbiquityIdentityDidChange, object: nil)
        }
    }
}
