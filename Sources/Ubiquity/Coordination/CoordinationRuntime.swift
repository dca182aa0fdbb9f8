// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import UbiquityCore

/// The process-wide coordination machinery: the presenter registry, the in-process engine, the
/// daemon client (when a daemon runs) and the inter-process locks.
package final class CoordinationRuntime: Sendable {
    package static let shared = CoordinationRuntime()

    private struct State {
        var configuration: CoordinationConfiguration
        var client: DaemonClient?
        var lastAttempt: ContinuousClock.Instant?
        var locks: InterprocessLocks
        var lockDirectoryReady = false
        var reconnecting = false
    }
    private let state: Mutex<State>
    private let claimBackends = Mutex<[UInt64: any CoordinationBackend]>([:])
    private let nextID = Atomic<UInt64>(1)
    package let registry = PresenterRegistry.shared
    package let engine: CoordinationEngine

    private init() {
        let configuration = CoordinationConfiguration()
        state = Mutex(State(configuration: configuration, locks: InterprocessLocks(lockFile: configuration.lockFilePath)))
        engine = CoordinationEngine(logger: configuration.logger)
    }

    package var configuration: CoordinationConfiguration { state.withLock { $0.configuration } }

    package func configure(_ configuration: CoordinationConfiguration) {
        let old = state.withLock { state -> DaemonClient? in
            state.configuration = configuration
            state.locks = InterprocessLocks(lockFile: configuration.lockFilePath)
            state.lockDirectoryReady = false
            state.lastAttempt = nil
            defer { state.client = nil }
            return state.client
        }
        old?.close()
    }

    package func nextClaimID() -> UInt64 { nextID.wrappingAdd(1, ordering: .relaxed).oldValue }

    /// The inter-process locks, with their folder created on first use.
    package func locks() throws -> InterprocessLocks {
        let (locks, ready, path) = state.withLock { ($0.locks, $0.lockDirectoryReady, $0.configuration.lockFilePath) }
        if !ready {
            try UbiquityPaths.ensureDirectory(URL(fileURLWithPath: CanonicalPath.parentPath(of: path)))
            state.withLock { $0.lockDirectoryReady = true }
        }
        return locks
    }

    /// The daemon client if connected.
    package func connectedClient() -> DaemonClient? {
        state.withLock { $0.client?.isConnected == true ? $0.client : nil }
    }

    /// The backend for a new claim: the daemon when reachable, else the in-process engine.
    package func backend() -> any CoordinationBackend {
        if let client = connectedClient() { return client }
        let attempt = state.withLock { state -> (String, Bool) in
            let now = ContinuousClock.now
            let due = state.configuration.usesDaemon
                && (state.lastAttempt.map { $0.duration(to: now) > .milliseconds(500) } ?? true)
            if due { state.lastAttempt = now }
            return (state.configuration.socketPath, due)
        }
        guard attempt.1, FileManager.default.fileExists(atPath: attempt.0) else { return engine }
        guard let client = try? DaemonClient.connect(path: attempt.0, runtime: self) else { return engine }
        state.withLock { $0.client = client }
        for entry in registry.entries { client.addPresenter(entry) }
        return client
    }

    /// Remembers which backend a claim went to (for finish and cancel).
    package func request(_ request: ClaimRequest, completion: @escaping CoordinationEngine.Completion) {
        let backend = backend()
        claimBackends.withLock { $0[request.id] = backend }
        backend.request(request, completion: completion)
    }

    package func finish(claimID: UInt64) {
        claimBackends.withLock { $0.removeValue(forKey: claimID) }?.finish(claimID)
    }

    package func cancel(claimID: UInt64) {
        claimBackends.withLock { $0[claimID] }?.cancel(claimID)
    }

    /// Called by the daemon client when its connection dropped.
    package func clientDisconnected(_ client: DaemonClient) {
        state.withLock { if $0.client === client { $0.client = nil; $0.lastAttempt = nil } }
        keepReconnecting()
    }

    /// While this process has presenters and no daemon connection, tries to reach the daemon
    /// every 0.5 s, so that presenters are registered (again) as soon as a daemon runs — even
    /// in a process that never coordinates itself (Apple's "re-adding presenters").
    package func keepReconnecting() {
        let start = state.withLock { state -> Bool in
            guard state.configuration.usesDaemon, !state.reconnecting else { return false }
            state.reconnecting = true
            return true
        }
        guard start else { return }
        scheduleReconnect()
    }

    /// The attempt runs off the timer thread: registering presenters waits for the daemon's acks.
    private func scheduleReconnect() {
        _ = DeadlineTimer.shared.schedule(after: .milliseconds(500)) { [self] in
            DispatchQueue.global().async { self.reconnectAttempt() }
        }
    }

    private func reconnectAttempt() {
        _ = backend()
        let presenters = !registry.entries.isEmpty
        let again = state.withLock { state -> Bool in
            let again = state.client == nil && presenters && state.configuration.usesDaemon
            if !again { state.reconnecting = false }
            return again
        }
        if again { scheduleReconnect() }
    }

    // MARK: Presenters and events

    package func addPresenter(_ presenter: any FilePresenter) {
        guard let entry = registry.add(presenter) else { return }
        engine.addPresenter(id: entry.id, purpose: entry.purpose, path: entry.path, endpoint: entry.endpoint)
        if let client = connectedClient() {
            client.addPresenter(entry)
        } else if !(backend() is DaemonClient) {
            keepReconnecting()
        }
    }

    package func removePresenter(_ presenter: any FilePresenter) {
        guard let entry = registry.remove(presenter) else { return }
        engine.removePresenter(id: entry.id)
        connectedClient()?.removePresenter(id: entry.id)
    }

    /// Re-reads a presenter's URL after a coordination made on its behalf.
    package func refreshPresenter(_ presenter: any FilePresenter) {
        guard let (entry, path) = registry.refreshPath(of: presenter) else { return }
        engine.updatePresenter(id: entry.id, path: path)
        connectedClient()?.updatePresenter(id: entry.id, path: path)
    }

    /// A presenter's path changed because the engine (here or in the daemon) moved it.
    package func presenterMoved(id: UInt64, to path: String) {
        registry.setPath(id: id, path: path)
        engine.updatePresenter(id: id, path: path)
    }

    package func itemDidMove(from old: String, to new: String, purpose: String) {
        FileVersion.itemDidMove(from: old, to: new)
        if let client = connectedClient() {
            client.itemDidMove(from: old, to: new, purpose: purpose)
            // Keep the in-process engine's view of our presenters current too.
            for entry in registry.entries {
                guard let path = entry.path, CanonicalPath.isSameOrDescendant(path, of: old) else { continue }
                presenterMoved(id: entry.id, to: CanonicalPath.rebase(path, from: old, to: new))
            }
        } else {
            engine.itemDidMove(from: old, to: new, purpose: purpose)
            for entry in registry.entries {
                guard let path = entry.path, CanonicalPath.isSameOrDescendant(path, of: old) else { continue }
                registry.setPath(id: entry.id, path: CanonicalPath.rebase(path, from: old, to: new))
            }
        }
    }

    /// Version events reach presenters in every process, so they go through the daemon when one
    /// runs (connecting if this process has not yet).
    package func versionEvent(_ kind: VersionEventKind, path: String, versionID: String) {
        backend().versionEvent(kind, path: path, versionID: versionID)
    }

    package func ubiquityAttributesChanged(path: String, keys: [String]) {
        backend().ubiquityAttributesChanged(path: path, keys: keys)
    }
}
