// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import UbiquityCore
import UbiquityWire

/// Adds and builds query indexes (``QueryIndexDefinition``) in the background: in development,
/// the first query of a shape that has no index asks for one (``request(_:container:environment:)``)
/// and is answered without it meanwhile; an index is used once every record has its key.
///
/// A build writes the keys of the type's records in batches of ``batchSize``, one write
/// transaction each (writers of other records go on between them), then marks the index ready.
/// Records written meanwhile get their keys from the write itself (the stores key every index,
/// built or not), so the build misses nothing. Builds left unfinished by a stop resume at start
/// (``resumeUnfinished()``); two servers building one index write the same keys.
package actor QueryIndexBuilder {
    /// The most indexes development adds to one record type by itself.
    package static let automaticLimit = 16
    /// Records keyed per write transaction.
    package static let batchSize = 2_000

    let store: any RecordStore
    let logger: Logger
    private var running: [String: Task<Void, Never>] = [:]
    /// Shapes refused for a type at ``automaticLimit`` (asked again only after a restart, or
    /// added by an administrator), so their queries do not each try again.
    private var declined: Set<String> = []

    /// Makes a builder over a store.
    package init(store: any RecordStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    /// Adds the index a query of `container`'s `environment` needs, unless the type has one or
    /// has ``automaticLimit`` already, and builds it in the background. Returns at once.
    package func request(_ definition: QueryIndexDefinition, container: String, environment: CloudKitEnvironment) {
        let name = "\(container)/\(environment.rawValue)/\(definition.recordType)/\(definition.text)"
        guard running[name] == nil, !declined.contains(name) else { return }
        let store = store
        let logger = logger
        running[name] = Task {
            do {
                let outcome = try await store.write { tx -> Outcome in
                    let indexes = try tx.queryIndexStore()
                    let existing = try await indexes.queryIndexes(container: container, environment: environment)
                    if let index = existing.first(where: { $0.definition == definition }) { return index.ready ? .ready : .build(index) }
                    guard existing.filter({ $0.definition.recordType == definition.recordType }).count < Self.automaticLimit else { return .declined }
                    return await .build(try indexes.addQueryIndex(container: container, environment: environment, definition: definition).index)
                }
                switch outcome {
                case .ready:
                    break
                case .declined:
                    logger.notice("no more automatic query indexes for this record type; its other query shapes are answered by a scan", metadata: [
                        "container": "\(container)", "recordType": "\(definition.recordType)", "limit": "\(Self.automaticLimit)",
                        "index": "\(definition)"])
                    self.decline(name)
                case .build(let index):
                    let keys = try await Self.build(index, store: store)
                    logger.info("built query index", metadata: ["container": "\(container)", "environment": "\(environment.rawValue)",
                                                                "index": "\(definition)", "keys": "\(keys)"])
                }
            } catch {
                logger.warning("could not build query index \(definition)", metadata: ["container": "\(container)", "error": "\(error)"])
            }
            self.finished(name)
        }
    }

    /// What a request finds in the store.
    private enum Outcome: Sendable {
        /// The index exists and is built.
        case ready
        /// The type has ``automaticLimit`` indexes already.
        case declined
        /// The index (new, or left unbuilt) to build.
        case build(StoredQueryIndex)
    }

    private func finished(_ name: String) {
        running[name] = nil
    }

    private func decline(_ name: String) {
        declined.insert(name)
    }

    /// Starts building, in the background, every index of every container left not ready (a
    /// stop during a build; an `ubiq admin` command that did not finish one).
    package func resumeUnfinished() async {
        do {
            let unfinished = try await store.read { tx -> [StoredQueryIndex] in
                let indexes = try tx.queryIndexStore()
                var unfinished: [StoredQueryIndex] = []
                for container in try await tx.containers() {
                    for environment in CloudKitEnvironment.allCases {
                        unfinished += try await indexes.queryIndexes(container: container, environment: environment).filter { !$0.ready }
                    }
                }
                return unfinished
            }
            for index in unfinished {
                request(index.definition, container: index.container, environment: index.environment)
            }
        } catch {
            logger.warning("could not list the query indexes left unbuilt", metadata: ["error": "\(error)"])
        }
    }

    /// Waits until no build runs (tests).
    package func idle() async {
        while let task = running.values.first {
            await task.value
        }
    }

    /// Writes the keys of every record of the index's type, then marks it ready; the number of
    /// records keyed.
    @discardableResult
    package static func build(_ index: StoredQueryIndex, store: any RecordStore) async throws -> Int {
        var after: Int64 = 0
        var count = 0
        while true {
            let from = after
            let batch = try await store.write { tx -> (last: Int64, count: Int)? in
                let indexes = try tx.queryIndexStore()
                // an index dropped meanwhile is not rebuilt
                guard try await indexes.queryIndexes(container: index.container, environment: index.environment).contains(where: { $0.id == index.id }) else {
                    return nil
                }
                let batch = try await indexes.buildQueryIndex(index, afterRecord: from, limit: batchSize)
                if batch == nil { try await indexes.setQueryIndexReady(id: index.id) }
                return batch
            }
            guard let batch else { return count }
            after = batch.last
            count += batch.count
        }
    }
}
