// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

/// Query indexes, as `ubiq admin schema query-indexes` scripts them: list, add (and build), drop.
/// Development adds the ones its queries need by itself; production has those deployed from
/// development and those added here, over fields its schema marks queryable or sortable.
extension RecordsAdmin {
    /// An index and how far along it is.
    package struct QueryIndexInfo: Sendable, Hashable {
        package var index: StoredQueryIndex
        /// Keys written so far (one per live record of the type once ready).
        package var keys: Int
    }

    /// The query indexes of an environment of a container, with their key counts.
    package func queryIndexes(container: String, environment: CloudKitEnvironment) async throws -> [QueryIndexInfo] {
        try RecordsAdmin.validate(container: container)
        return try await store.read { tx in
            try await RecordsAdmin.requireContainer(container, tx: tx)
            let indexes = try tx.queryIndexStore()
            var infos: [QueryIndexInfo] = []
            for index in try await indexes.queryIndexes(container: container, environment: environment) {
                infos.append(QueryIndexInfo(index: index, keys: try await indexes.queryIndexKeyCount(id: index.id)))
            }
            return infos
        }
    }

    /// Adds an index (`Item(=cat,+rank)`: ``QueryIndexDefinition/init(spelled:)``) and builds it
    /// before returning. Refuses (`invalidArgument`) a field the environment's schema lacks, or
    /// does not mark queryable (an `=` component) or sortable (`+`/`-`).
    package func addQueryIndex(container: String, environment: CloudKitEnvironment, spelled: String) async throws -> QueryIndexInfo {
        try RecordsAdmin.validate(container: container)
        guard let definition = QueryIndexDefinition(spelled: spelled) else {
            throw UbiquityError(.invalidArgument, "query index \(spelled.debugDescription): expected TYPE(COMPONENTS), each component =FIELD (equality), +FIELD (ascending) or -FIELD (descending), like Item(=cat,+rank)")
        }
        let (index, _) = try await store.write { tx in
            try await RecordsAdmin.requireContainer(container, tx: tx)
            let schema = try await tx.schemas().schema(container: container, environment: environment)
            let refusals = definition.refusals(in: schema)
            guard refusals.isEmpty else {
                throw UbiquityError(.invalidArgument, "query index \(definition) in \(environment.rawValue): " + refusals.joined(separator: "; "))
            }
            return try await tx.queryIndexStore().addQueryIndex(container: container, environment: environment, definition: definition)
        }
        let keys = index.ready ? try await store.read { tx in try await tx.queryIndexStore().queryIndexKeyCount(id: index.id) }
            : try await QueryIndexBuilder.build(index, store: store)
        var built = index
        built.ready = true
        return QueryIndexInfo(index: built, keys: keys)
    }

    /// Drops an index of the environment by id (`notFound` when it has none).
    package func dropQueryIndex(container: String, environment: CloudKitEnvironment, id: Int64) async throws {
        try RecordsAdmin.validate(container: container)
        try await store.write { tx in
            try await RecordsAdmin.requireContainer(container, tx: tx)
            let indexes = try tx.queryIndexStore()
            guard try await indexes.queryIndexes(container: container, environment: environment).contains(where: { $0.id == id }) else {
                throw UbiquityError(.notFound, "the \(environment.rawValue) environment of \(container) has no query index \(id) (see `ubiq admin schema query-indexes \(container) --environment \(environment.rawValue)`)")
            }
            try await indexes.dropQueryIndex(id: id)
        }
    }

    /// Drops the indexes of an environment that its schema no longer allows (a field gone, or no
    /// longer queryable or sortable where the index needs it); their descriptions.
    static func dropDisallowedQueryIndexes(_ tx: any RecordStoreTransaction, container: String, environment: CloudKitEnvironment,
                                           schema: ContainerSchema) async throws -> [String] {
        let indexes = try tx.queryIndexStore()
        var dropped: [String] = []
        for index in try await indexes.queryIndexes(container: container, environment: environment) where !index.definition.refusals(in: schema).isEmpty {
            try await indexes.dropQueryIndex(id: index.id)
            dropped.append(index.definition.description)
        }
        return dropped
    }

    /// Copies development's indexes that production's schema allows to production (not built:
    /// the caller builds them); the added ones.
    static func deployQueryIndexes(_ tx: any RecordStoreTransaction, container: String, production: ContainerSchema) async throws -> [StoredQueryIndex] {
        let indexes = try tx.queryIndexStore()
        var added: [StoredQueryIndex] = []
        for index in try await indexes.queryIndexes(container: container, environment: .development) where index.definition.refusals(in: production).isEmpty {
            let (stored, isNew) = try await indexes.addQueryIndex(container: container, environment: .production, definition: index.definition)
            if isNew { added.append(stored) }
        }
        return added
    }
}

extension QueryIndexDefinition {
    /// The definition `Item(=cat,+rank)` spells (spaces ignored), or nil.
    package init?(spelled: String) {
        let text = spelled.filter { !$0.isWhitespace }
        guard let open = text.firstIndex(of: "("), text.last == ")", open != text.startIndex else { return nil }
        let type = String(text[..<open])
        guard (try? RecordTypeSchema.validate(name: type)) != nil else { return nil }
        self.init(recordType: type, text: String(text[text.index(after: open)..<text.index(before: text.endIndex)]))
    }

    /// Why `schema` does not allow the index (empty when it does): every custom field must be in
    /// the type, queryable for an equality component and sortable for a sort component.
    package func refusals(in schema: ContainerSchema) -> [String] {
        guard let type = schema.recordTypes[recordType] else { return ["the schema has no record type \(recordType)"] }
        var refusals: [String] = []
        for component in components {
            guard case .field(let name) = component.key else { continue }
            guard let field = type.fields[name] else {
                refusals.append("\(recordType) has no field \(name)")
                continue
            }
            if component.role == .equal, !field.queryable { refusals.append("field \(recordType).\(name) is not queryable") }
            if component.role != .equal, !field.sortable { refusals.append("field \(recordType).\(name) is not sortable") }
        }
        return refusals
    }
}
