import Logging
import UbiquityCore
import UbiquityStore

extension IndexHost {
    /// How many results a gathering-progress event carries at most.
    package static let gatheringBatchSize = 1_000

    /// Runs `request`: gathers the initial results from the index (adding roots for scopes the
    /// index does not cover yet), then, when the request watches, reports every change of the
    /// result set until the stream is dropped. Errors end the stream with ``QueryEvent/failed(_:)``.
    package func run(_ request: QueryRequest) -> AsyncStream<QueryEvent> {
        let (stream, continuation) = AsyncStream<QueryEvent>.makeStream(bufferingPolicy: .unbounded)
        let task = Task { [self] in
            var acquired: [String] = []
            defer { release(scopes: acquired) }
            do {
                let predicate = try QueryPredicate(format: request.predicate)
                try await acquire(scopes: request.scopes)
                acquired = request.scopes
                let deltas = request.watch ? self.deltas() : nil
                let sort = request.sort.map { IndexSort(attribute: $0.attribute, ascending: $0.ascending) }
                let index = self.index
                let found = try await BlockingWork.run {
                    try index.query(predicate, under: request.scopes, sortedBy: sort)
                }
                var live = LiveQueryState(predicate: predicate, scopes: request.scopes, excluding: request.excluding)
                let records = live.gather(found)
                var start = 0
                while start < records.count {
                    let end = min(start + Self.gatheringBatchSize, records.count)
                    continuation.yield(.gatheringProgress(Array(records[start..<end])))
                    start = end
                }
                continuation.yield(.finishGathering(count: live.matches.count))
                guard let deltas else { continuation.finish(); return }
                for await delta in deltas {
                    if Task.isCancelled { break }
                    let update = live.apply(delta)
                    if !update.isEmpty { continuation.yield(.update(update)) }
                }
            } catch {
                continuation.yield(.failed(UbiquityError.wrapping(error, "query failed")))
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
