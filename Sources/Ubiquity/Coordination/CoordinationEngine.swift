// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Synchronization
import UbiquityCore

/// Arbitrates claims and messages presenters: the coordination machinery shared by the
/// in-process fallback and the daemon's coordination service.
///
/// All state sits behind one mutex; presenters and waiters are always called outside it. Nothing
/// here runs on the cooperative thread pool: replies come on presenters' queues or socket
/// threads, time-outs on ``DeadlineTimer``.
package final class CoordinationEngine: Sendable {
    /// The outcome of a claim: granted (the accessor may run) or failed.
    package typealias Completion = @Sendable (UbiquityError?) -> Void

    struct Presenter {
        var id: UInt64
        var purpose: String
        var path: String?
        var endpoint: any PresenterEndpoint
    }

    struct Claim {
        var request: ClaimRequest
        var completion: Completion?
        var phase = Phase.waiting
        var relinquished: [(presenter: UInt64, token: UInt64)] = []
        var pending: Set<UInt64> = []
        var stage = 0
        var timer: UInt64?
        var preStamps: [String: FileStamp?] = [:]
        enum Phase { case waiting, messaging, granted }
    }

    struct State {
        var arbiter = ArbiterState()
        var presenters: [UInt64: Presenter] = [:]
        var byPath: [String: Set<UInt64>] = [:]
        var claims: [UInt64: Claim] = [:]
        var nextToken: UInt64 = 1
        /// Presenters moved by a claim's accessor (by purpose): they heard `didMove`, not `didChange`.
        var moved: [String: Set<UInt64>] = [:]
        /// Paths moved from and to by a claim's accessor (by purpose): folders heard `subitemDidMove`.
        var movedPaths: [String: Set<String>] = [:]
    }

    private let state = Mutex(State())
    private let logger: Logger
    private let timer: DeadlineTimer

    package init(logger: Logger, timer: DeadlineTimer = .shared) {
        self.logger = logger
        self.timer = timer
    }

    // MARK: Presenters

    /// Registers a presenter under `id` (unique within this engine).
    package func addPresenter(id: UInt64, purpose: String, path: String?, endpoint: any PresenterEndpoint) {
        state.withLock { state in
            state.presenters[id] = Presenter(id: id, purpose: purpose, path: path, endpoint: endpoint)
            if let path { state.byPath[path, default: []].insert(id) }
        }
        logger.trace("presenter added", metadata: ["ubiquity.presenter": "\(id)", "ubiquity.path": "\(path ?? "-")"])
    }

    /// Unregisters a presenter.
    package func removePresenter(id: UInt64) {
        state.withLock { state in
            guard let presenter = state.presenters.removeValue(forKey: id) else { return }
            if let path = presenter.path { state.byPath[path]?.remove(id) }
        }
    }

    /// Updates the path a presenter presents (after `presentedItemURL` changed).
    package func updatePresenter(id: UInt64, path: String?) {
        state.withLock { state in
            guard let old = state.presenters[id], old.path != path else { return }
            if let oldPath = old.path { state.byPath[oldPath]?.remove(id) }
            state.presenters[id]!.path = path
            if let path { state.byPath[path, default: []].insert(id) }
        }
    }

    // MARK: Claims

    /// Queues a claim; `completion` is called once, with nil when the accessor may run (call
    /// ``finish(_:)`` afterwards) or with the error that ended it.
    package func request(_ request: ClaimRequest, completion: @escaping Completion) {
        let granted = state.withLock { state -> [UInt64] in
            state.claims[request.id] = Claim(request: request, completion: completion)
            return state.arbiter.request(request.arbiterClaim)
        }
        let waitingNow = state.withLock { $0.arbiter.isWaiting(request.id) }
        if waitingNow {
            let token = timer.schedule(after: request.timeout) { [self] in
                self.fail(request.id, UbiquityError(.timedOut,
                    "coordinated access to '\(request.items.first?.path ?? "?")' waited longer than \(request.timeout) for "
                    + self.describeBlockers(of: request.id)),
                    onlyIfWaiting: true)
            }
            state.withLock { $0.claims[request.id]?.timer = token }
        }
        beginMessaging(granted)
    }

    /// Cancels a claim that has not been granted yet (its completion gets `cancelled`).
    package func cancel(_ id: UInt64) {
        fail(id, UbiquityError(.cancelled, "the coordinated access was cancelled before it started"), onlyIfNotGranted: true)
    }

    /// The accessor of a granted claim finished: presenters hear of the change, the claim is
    /// released, and presenters reacquire.
    package func finish(_ id: UInt64) {
        guard let claim = state.withLock({ $0.claims[id] }) else { return }
        var post: [(UInt64, PresenterMessage)] = []
        var postStamps: [String: FileStamp?] = [:]
        if !claim.preStamps.isEmpty {
            for item in claim.request.items { postStamps[item.path] = FileStamp.of(item.path) }
        }
        let (endpoints, reacquire, granted) = state.withLock { state -> ([UInt64: any PresenterEndpoint], [(UInt64, UInt64)], [UInt64]) in
            if !claim.request.isPrepare && !claim.preStamps.isEmpty {
                for item in claim.request.items {
                    guard case .write(let options) = item.access else { continue }
                    let before = claim.preStamps[item.path] ?? nil
                    let after = postStamps[item.path] ?? nil
                    let moved = state.moved[claim.request.purpose] ?? []
                    func others(_ ids: Set<UInt64>) -> [UInt64] {
                        ids.filter { state.presenters[$0]?.purpose != claim.request.purpose && !moved.contains($0) }
                    }
                    if after != nil, !options.contains(.forDeleting), after?.isDirectory == false {
                        for id in others(state.byPath[item.path] ?? []) { post.append((id, .didChange)) }
                    }
                    let appeared = before == nil && after != nil
                    if before == nil && after == nil { continue }
                    if state.movedPaths[claim.request.purpose]?.contains(item.path) == true { continue }
                    for ancestor in CanonicalPath.ancestors(of: item.path) {
                        for id in others(state.byPath[ancestor] ?? []) {
                            post.append((id, appeared ? .subitemDidAppear(path: item.path) : .subitemDidChange(path: item.path)))
                        }
                    }
                }
            }
            let record = state.claims.removeValue(forKey: id)
            if !state.claims.values.contains(where: { $0.request.purpose == claim.request.purpose }) {
                state.moved.removeValue(forKey: claim.request.purpose)
                state.movedPaths.removeValue(forKey: claim.request.purpose)
            }
            let granted = state.arbiter.remove(id)
            var endpoints: [UInt64: any PresenterEndpoint] = [:]
            for (pid, _) in post { endpoints[pid] = state.presenters[pid]?.endpoint }
            for (pid, _) in record?.relinquished ?? [] { endpoints[pid] = state.presenters[pid]?.endpoint }
            return (endpoints, record?.relinquished ?? [], granted)
        }
        // Per presenter, in order: change notifications, then reacquire — one delivery each.
        var batches: [UInt64: [PresenterMessage]] = [:]
        var order: [UInt64] = []
        for (pid, message) in post + reacquire.map({ ($0.0, PresenterMessage.reacquire(token: $0.1)) }) {
            if batches[pid] == nil { order.append(pid) }
            batches[pid, default: []].append(message)
        }
        for pid in order { endpoints[pid]?.deliver(batches[pid]!) }
        beginMessaging(granted)
    }

    // MARK: Events outside claims

    /// An item moved (announced inside a coordinated write): presenters of it and of everything
    /// inside it move along and hear `didMove`; presenters of the folders around it hear
    /// `subitemDidMove`.
    package func itemDidMove(from old: String, to new: String, purpose: String) {
        let deliveries = state.withLock { state -> [(any PresenterEndpoint, PresenterMessage)] in
            var deliveries: [(any PresenterEndpoint, PresenterMessage)] = []
            if state.claims.values.contains(where: { $0.request.purpose == purpose }) {
                state.movedPaths[purpose, default: []].formUnion([old, new])
            }
            for (id, presenter) in state.presenters {
                guard let path = presenter.path, CanonicalPath.isSameOrDescendant(path, of: old) else { continue }
                let moved = CanonicalPath.rebase(path, from: old, to: new)
                state.byPath[path]?.remove(id)
                state.byPath[moved, default: []].insert(id)
                state.presenters[id]!.path = moved
                if state.claims.values.contains(where: { $0.request.purpose == purpose }) {
                    state.moved[purpose, default: []].insert(id)
                }
                if presenter.purpose != purpose { deliveries.append((presenter.endpoint, .didMove(to: moved))) }
            }
            var seen = Set<UInt64>()
            for ancestor in Set(CanonicalPath.ancestors(of: old) + CanonicalPath.ancestors(of: new)) {
                for id in state.byPath[ancestor] ?? [] where seen.insert(id).inserted {
                    guard let presenter = state.presenters[id], presenter.purpose != purpose else { continue }
                    deliveries.append((presenter.endpoint, .subitemDidMove(from: old, to: new)))
                }
            }
            return deliveries
        }
        for (endpoint, message) in deliveries { endpoint.deliver(message, reply: nil) }
    }

    /// A version of the item at `path` was gained, lost or resolved: every presenter of the item
    /// (including the one that did it) and of the folders around it hears of it.
    package func versionEvent(_ kind: VersionEventKind, path: String, versionID: String) {
        let deliveries = state.withLock { state -> [(any PresenterEndpoint, PresenterMessage)] in
            var deliveries: [(any PresenterEndpoint, PresenterMessage)] = []
            for id in state.byPath[path] ?? [] {
                if let p = state.presenters[id] { deliveries.append((p.endpoint, .versionEvent(kind, itemPath: path, versionID: versionID, subitem: false))) }
            }
            for ancestor in CanonicalPath.ancestors(of: path) {
                for id in state.byPath[ancestor] ?? [] {
                    if let p = state.presenters[id] { deliveries.append((p.endpoint, .versionEvent(kind, itemPath: path, versionID: versionID, subitem: true))) }
                }
            }
            return deliveries
        }
        for (endpoint, message) in deliveries { endpoint.deliver(message, reply: nil) }
    }

    /// Ubiquity attributes of the item at `path` changed.
    package func ubiquityAttributesChanged(path: String, keys: [String]) {
        let endpoints = state.withLock { state in (state.byPath[path] ?? []).compactMap { state.presenters[$0]?.endpoint } }
        for endpoint in endpoints { endpoint.deliver(.ubiquityAttributesChanged(keys: keys), reply: nil) }
    }

    // MARK: Messaging

    private func beginMessaging(_ ids: [UInt64]) {
        for id in ids { runStage(id, stage: 1) }
    }

    private enum Step {
        case gone
        case skip
        case granted(Completion?, [UInt64])
        case deliver([(UInt64, any PresenterEndpoint, PresenterMessage)], [UInt64], Duration)
    }

    /// Stage 1: relinquish; stage 2: save / accommodate deletion; stage 3: granted.
    private func runStage(_ id: UInt64, stage first: Int) {
        var stage = first
        while true {
            var stamps: [String: FileStamp?] = [:]
            // Stamps tell presenters "appeared" from "changed"; without presenters nobody asks.
            if stage == 1, let items = state.withLock({ $0.presenters.isEmpty ? nil : $0.claims[id]?.request.items }) {
                for item in items { stamps[item.path] = FileStamp.of(item.path) }
            }
            let step = state.withLock { state -> Step in
                guard var claim = state.claims[id] else { return .gone }
                if stage == 1 {
                    if let timer = claim.timer { self.timer.cancel(timer); claim.timer = nil }
                    claim.preStamps = stamps
                }
                var messages: [(UInt64, any PresenterEndpoint, PresenterMessage)] = []
                if stage <= 2 {
                    for (pid, message) in targets(of: claim.request, stage: stage, preStamps: claim.preStamps, state: &state) {
                        guard let presenter = state.presenters[pid] else { continue }
                        switch message {
                        case .relinquishToReader(let token), .relinquishToWriter(let token):
                            claim.relinquished.append((pid, token))
                        default: break
                        }
                        messages.append((pid, presenter.endpoint, message))
                    }
                }
                if stage > 2 {
                    claim.phase = .granted
                    let completion = claim.completion
                    claim.completion = nil
                    state.claims[id] = claim
                    return .granted(completion, state.arbiter.setMessaging(id, purposes: []))
                }
                if messages.isEmpty {
                    state.claims[id] = claim
                    return .skip
                }
                claim.phase = .messaging
                claim.stage = stage
                claim.pending = Set(messages.map(\.0))
                state.claims[id] = claim
                let purposes = Set(messages.compactMap { state.presenters[$0.0]?.purpose })
                return .deliver(messages, state.arbiter.setMessaging(id, purposes: purposes), claim.request.timeout)
            }
            switch step {
            case .gone:
                return
            case .skip:
                stage += 1
            case .granted(let completion, let granted):
                completion?(nil)
                beginMessaging(granted)
                return
            case .deliver(let messages, let granted, let timeout):
                let current = stage
                let token = timer.schedule(after: timeout) { [self] in
                    self.fail(id, UbiquityError(.timedOut,
                        "\(self.describePending(of: id)) did not answer within \(timeout); the coordinated access was abandoned"),
                        onlyIfStage: current)
                }
                state.withLock { $0.claims[id]?.timer = token }
                for (pid, endpoint, message) in messages {
                    endpoint.deliver(message) { [self] error in
                        self.reply(id, stage: current, presenter: pid, error: error)
                    }
                }
                beginMessaging(granted)
                return
            }
        }
    }

    /// "the presenter of '/a' (in process 12)": who a messaging claim still waits for.
    private func describePending(of id: UInt64) -> String {
        state.withLock { state in
            let names = (state.claims[id]?.pending ?? []).sorted().compactMap { pid -> String? in
                guard let presenter = state.presenters[pid] else { return nil }
                return "the presenter of '\(presenter.path ?? "?")' (\(presenter.endpoint.location))"
            }
            return names.isEmpty ? "a file presenter" : names.joined(separator: ", ")
        }
    }

    /// "a coordinated write of '/a' by process 12": the claims a waiting claim waits for.
    private func describeBlockers(of id: UInt64) -> String {
        state.withLock { state in
            guard let waiting = state.arbiter.waiting.first(where: { $0.id == id }) else { return "other coordinated accesses" }
            let earlier = state.arbiter.waiting.prefix { $0.id != id }
            let blockers = (Array(state.arbiter.granted.values) + earlier).filter { ArbiterState.conflict($0, waiting) }
            let names = blockers.prefix(5).compactMap { blocker -> String? in
                guard let claim = state.claims[blocker.id] else { return nil }
                let kinds = claim.request.items.map { item -> String in
                    if case .read = item.access { return "read of '\(item.path)'" }
                    return "write of '\(item.path)'"
                }
                let phase = claim.phase == .waiting ? "queued" : "holding"
                return "a coordinated \(kinds.joined(separator: " and ")) by \(claim.request.origin) (\(phase))"
            }
            return names.isEmpty ? "other coordinated accesses" : names.joined(separator: "; ")
        }
    }

    private func reply(_ id: UInt64, stage: Int, presenter: UInt64, error: UbiquityError?) {
        if let error {
            fail(id, UbiquityError(.presenterFailed, "a file presenter refused the coordinated access: \(error.message)", underlying: error),
                 onlyIfStage: stage)
            return
        }
        let done = state.withLock { state -> Bool in
            guard var claim = state.claims[id], claim.phase == .messaging, claim.stage == stage else { return false }
            claim.pending.remove(presenter)
            let done = claim.pending.isEmpty
            if done, let timer = claim.timer { self.timer.cancel(timer); claim.timer = nil }
            state.claims[id] = claim
            return done
        }
        if done { runStage(id, stage: stage + 1) }
    }

    private func fail(_ id: UInt64, _ error: UbiquityError, onlyIfWaiting: Bool = false, onlyIfNotGranted: Bool = false,
                      onlyIfStage: Int? = nil) {
        let outcome = state.withLock { state -> (Completion?, [(any PresenterEndpoint, UInt64)], [UInt64])? in
            guard let claim = state.claims[id] else { return nil }
            if onlyIfWaiting && claim.phase != .waiting { return nil }
            if onlyIfNotGranted && claim.phase == .granted { return nil }
            if let stage = onlyIfStage, claim.phase != .messaging || claim.stage != stage { return nil }
            if let timer = claim.timer { self.timer.cancel(timer) }
            state.claims.removeValue(forKey: id)
            let granted = state.arbiter.remove(id)
            let reacquire = claim.relinquished.compactMap { r in state.presenters[r.presenter].map { ($0.endpoint, r.token) } }
            return (claim.completion, reacquire, granted)
        }
        guard let (completion, reacquire, granted) = outcome else { return }
        logger.debug("coordinated access failed", metadata: ["ubiquity.claim": "\(id)", "ubiquity.error": "\(error)"])
        for (endpoint, token) in reacquire { endpoint.deliver(.reacquire(token: token), reply: nil) }
        completion?(error)
        beginMessaging(granted)
    }

    /// The messages of one stage of `request`, by presenter.
    private func targets(of request: ClaimRequest, stage: Int, preStamps: [String: FileStamp?],
                         state: inout State) -> [(UInt64, PresenterMessage)] {
        var result: [UInt64: PresenterMessage] = [:]
        // Presenters already prepared by a `prepare(…)` batch of the same purpose are not asked again.
        var prepared = Set<UInt64>()
        for claim in state.claims.values where claim.request.isPrepare && claim.request.purpose == request.purpose
            && claim.phase == .granted && claim.request.id != request.id {
            prepared.formUnion(claim.relinquished.map(\.presenter))
        }
        func presenters(at path: String, subtree: Bool) -> [UInt64] {
            var ids = Array(state.byPath[path] ?? [])
            if subtree {
                for (id, presenter) in state.presenters {
                    if let p = presenter.path, p != path, CanonicalPath.isSameOrDescendant(p, of: path) { ids.append(id) }
                }
            }
            return ids.filter { state.presenters[$0]?.purpose != request.purpose && !prepared.contains($0) }
        }
        for item in request.items {
            let subtree = item.lock.mode.isSubtree
            switch (item.access, stage) {
            case (.read, 1):
                for id in presenters(at: item.path, subtree: subtree) where result[id] == nil {
                    result[id] = .relinquishToReader(token: state.nextToken)
                    state.nextToken += 1
                }
            case (.read(let options), 2):
                guard !options.contains(.withoutChanges) else { continue }
                for id in presenters(at: item.path, subtree: subtree) { result[id] = .savePresentedItemChanges }
            case (.write, 1):
                for id in presenters(at: item.path, subtree: subtree) {
                    if case .relinquishToWriter = result[id] { continue }
                    result[id] = .relinquishToWriter(token: state.nextToken)
                    state.nextToken += 1
                }
            case (.write(let options), 2):
                if !options.isDisjoint(with: [.forDeleting, .forReplacing]) {
                    guard (preStamps[item.path] ?? nil) != nil else { continue }  // nothing there to delete
                    for id in presenters(at: item.path, subtree: true) { result[id] = .accommodateDeletion }
                    for ancestor in CanonicalPath.ancestors(of: item.path) {
                        for id in presenters(at: ancestor, subtree: false) where result[id] == nil {
                            result[id] = .accommodateSubitemDeletion(path: item.path)
                        }
                    }
                } else if options.contains(.forMerging) {
                    for id in presenters(at: item.path, subtree: false) { result[id] = .savePresentedItemChanges }
                }
            default:
                continue
            }
        }
        return result.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }
}
