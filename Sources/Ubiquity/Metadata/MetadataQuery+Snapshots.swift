import Foundation
import UbiquityCore
import UbiquityIndex
import UbiquityStore

extension MetadataQuery {
    /// One step of a running query, as ``snapshots()`` delivers it.
    public struct Snapshot: @unchecked Sendable {
        /// What happened.
        public enum Kind: Sendable {
            /// Gathering began (the results are empty).
            case didStartGathering
            /// Some initial results arrived.
            case gatheringProgress
            /// The initial results are complete.
            case didFinishGathering
            /// The results changed after gathering.
            case didUpdate
            /// The query stopped on an error.
            case failed(UbiquityError)
        }

        /// What happened.
        public let kind: Kind
        /// The results after it (`@unchecked Sendable`: items are immutable), made in order
        /// when read.
        public var results: [MetadataItem] { frozenResults.items }
        let frozenResults: MetadataQueryResults.Frozen
        /// Items that entered the results.
        public let added: [MetadataItem]
        /// Results whose attributes changed.
        public let changed: [MetadataItem]
        /// Items that left the results.
        public let removed: [MetadataItem]
    }

    /// The query's steps as an `AsyncSequence`: every notification it posts from now on, with
    /// the results at that moment. The sequence ends when the query is stopped or fails, or
    /// when the consumer stops iterating.
    public func snapshots() -> AsyncStream<Snapshot> {
        let (stream, continuation) = AsyncStream<Snapshot>.makeStream(bufferingPolicy: .unbounded)
        let id = locked { () -> UInt64 in
            defer { nextSnapshotID += 1 }
            snapshotContinuations[nextSnapshotID] = continuation
            return nextSnapshotID
        }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            self.locked { _ = self.snapshotContinuations.removeValue(forKey: id) }
        }
        return stream
    }

    /// Runs a query once and returns its initial results (no live updates).
    public static func results(matching predicate: QueryPredicate, in scopes: [Any] = [],
                               sortedBy sortDescriptors: [MetadataSortDescriptor] = []) async throws -> [MetadataItem] {
        let query = MetadataQuery()
        query.predicate = predicate
        query.searchScopes = scopes
        query.sortDescriptors = sortDescriptors
        let steps = query.snapshots()
        guard query.start() else {
            throw query.lastError ?? UbiquityError(.invalidArgument, "the query did not start")
        }
        defer { query.stop() }
        for await step in steps {
            switch step.kind {
            case .didFinishGathering: return step.results
            case .failed(let error): throw error
            default: continue
            }
        }
        throw UbiquityError(.cancelled, "the query ended before gathering finished")
    }

    /// Posts `name` (if any) on the operation queue and hands the snapshot to ``snapshots()``.
    func post(_ name: Notification.Name?, kind: Snapshot.Kind, update: QueryUpdate?) {
        let (queue, results, continuations, delegate) = locked {
            (_operationQueue ?? privateQueue, resultSet.frozen, Array(snapshotContinuations.values), _delegate)
        }
        func wrap(_ records: [IndexRecord]) -> [MetadataItem] { records.map(MetadataItem.init(record:)) }
        let added = wrap(update?.added ?? []), changed = wrap(update?.changed ?? []), removed = wrap(update?.removed ?? [])
        let snapshot = Snapshot(kind: kind, frozenResults: results, added: added, changed: changed, removed: removed)
        let isFinal: Bool = if case .failed = kind { true } else { false }
        let box = UncheckedBox(value: (added, changed, removed))
        queue.addOperation { [self] in
            if let name {
                var userInfo: [AnyHashable: Any]?
                if name == .NSMetadataQueryDidUpdate {
                    let replace: ([MetadataItem]) -> [Any] = { items in
                        guard let delegate else { return items }
                        return items.map { delegate.metadataQuery(self, replacementObjectForResultObject: $0) }
                    }
                    userInfo = [NSMetadataQueryUpdateAddedItemsKey: replace(box.value.0),
                                NSMetadataQueryUpdateChangedItemsKey: replace(box.value.1),
                                NSMetadataQueryUpdateRemovedItemsKey: replace(box.value.2)]
                }
                NotificationCenter.default.post(name: name, object: self, userInfo: userInfo)
            }
            for continuation in continuations {
                continuation.yield(snapshot)
                if isFinal { continuation.finish() }
            }
        }
    }
}

/// Carries non-`Sendable` but immutable values (items) into an operation.
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
}
