import Foundation
import UbiquityCore
import UbiquityIndex
import UbiquityStore

extension MetadataQuery {
    /// Starts gathering (`startQuery`). Returns false when there is no predicate, the query is
    /// already running, or the scopes are invalid (see ``lastError``).
    @discardableResult
    public func start() -> Bool {
        let request: QueryRequest
        let generation: Int
        do {
            (request, generation) = try locked {
                guard phase != .gathering, phase != .live else {
                    throw UbiquityError(.invalidArgument, "the query is already running")
                }
                guard let predicate = _predicate else {
                    throw UbiquityError(.invalidArgument, "the query has no predicate")
                }
                let (scopes, excluding) = try Self.resolve(scopes: _searchScopes)
                let sort = _sortDescriptors.compactMap { descriptor in
                    MetadataAttribute(name: descriptor.key).map { QuerySortKey($0, ascending: descriptor.ascending) }
                }
                self.generation += 1
                phase = .gathering
                resultSet.removeAll()
                pending = QueryUpdate()
                lastErrorValue = nil
                return (QueryRequest(predicate: predicate.predicateFormat, scopes: scopes, excluding: excluding, sort: sort),
                        self.generation)
            }
        } catch {
            locked { lastErrorValue = UbiquityError.wrapping(error, "cannot start the query") }
            return false
        }
        post(.NSMetadataQueryDidStartGathering, kind: .didStartGathering, update: nil)
        let events = QueryBackend.events(for: request, logger: logger)
        let task = Task { [weak self] in
            for await event in events {
                guard let self else { return }
                if !self.handle(event, generation: generation) { return }
            }
        }
        locked { self.task = task }
        return true
    }

    /// Stops the query (`stopQuery`): no more notifications; the results stay as they are.
    public func stop() {
        let task = locked { () -> Task<Void, Never>? in
            guard phase == .gathering || phase == .live else { return nil }
            phase = .stopped
            generation += 1
            defer { self.task = nil }
            return self.task
        }
        task?.cancel()
    }

    /// Holds back result changes until the matching ``enableUpdates()``; calls nest. Read the
    /// results between the two so they do not change under you.
    public func disableUpdates() {
        locked { disableCount += 1 }
    }

    /// Lets result changes through again, posting what was held back.
    public func enableUpdates() {
        let flush = locked { () -> Bool in
            disableCount = max(0, disableCount - 1)
            return disableCount == 0 && !pending.isEmpty
        }
        if flush { self.flush() }
    }

    /// Handles one event of the running query; false when the query moved on.
    func handle(_ event: QueryEvent, generation: Int) -> Bool {
        enum Action { case none, flush, schedule(Duration), finish, fail(UbiquityError) }
        let action: Action = locked {
            guard generation == self.generation else { return .none }
            switch event {
            case .gatheringProgress(let records):
                pending.added.append(contentsOf: records)
                pendingIsGathering = true
                return disableCount == 0 ? .flush : .none
            case .finishGathering:
                return .finish
            case .update(let update):
                pending.merge(update)
                guard disableCount == 0, !flushScheduled else { return .none }
                let interval = Duration.milliseconds(Int64(_notificationBatchingInterval * 1000))
                let due = lastPost + interval
                if interval == .zero || due <= ContinuousClock.now { return .flush }
                flushScheduled = true
                return .schedule(due - ContinuousClock.now)
            case .failed(let error):
                return .fail(error)
            }
        }
        switch action {
        case .none: break
        case .flush: flush()
        case .schedule(let delay):
            Task { [weak self] in
                try? await Task.sleep(for: delay)
                guard let self else { return }
                self.locked { self.flushScheduled = false }
                if self.locked({ self.generation == generation && self.disableCount == 0 }) { self.flush() }
            }
        case .finish:
            flush()
            let finished = locked { () -> Bool in
                guard generation == self.generation, phase == .gathering else { return false }
                phase = .live
                return true
            }
            if finished { post(.NSMetadataQueryDidFinishGathering, kind: .didFinishGathering, update: nil) }
        case .fail(let error):
            logger.debug("metadata query failed", metadata: ["ubiquity.error": "\(error)"])
            let wasGathering = locked { () -> Bool in
                guard generation == self.generation else { return false }
                lastErrorValue = error
                let was = phase == .gathering
                phase = .stopped
                self.generation += 1
                return was
            }
            // Observers waiting for the end of gathering hear of it (and find `lastError` set);
            // snapshot consumers get the failure.
            post(wasGathering ? .NSMetadataQueryDidFinishGathering : nil, kind: .failed(error), update: nil)
            return false
        }
        return true
    }

    /// Applies held-back changes to the results and posts them.
    func flush() {
        let result: (update: QueryUpdate, gathering: Bool)? = locked { () -> (update: QueryUpdate, gathering: Bool)? in
            guard !pending.isEmpty, disableCount == 0 else { return nil }
            let update = pending
            let gathering = pendingIsGathering && phase == .gathering
            pending = QueryUpdate()
            pendingIsGathering = false
            applyLocked(update)
            lastPost = ContinuousClock.now
            return (update, gathering)
        }
        guard let result else { return }
        if result.gathering {
            post(.NSMetadataQueryGatheringProgress, kind: .gatheringProgress, update: result.update)
        } else {
            post(.NSMetadataQueryDidUpdate, kind: .didUpdate, update: result.update)
        }
    }
}
