// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import UbiquityCore
import UbiquityServer
import UbiquityWire

extension SchemaAdmin {
    /// `ubiq admin schema query-indexes CONTAINER [--add SPEC | --drop ID]`.
    struct QueryIndexes: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "query-indexes",
            abstract: "List, add or drop query indexes: the sorted keys that answer a query shape in O(log n + k).",
            discussion: """
                An index answers queries whose EQUALS filters are its = fields and whose sort is its \
                + (ascending) and - (descending) fields, in order. Development adds the index each \
                query shape needs by itself and uses it once built; production has the indexes \
                deployed from development (`schema deploy`) and those added here, over fields its \
                schema marks queryable (=) or sortable (+, -). Queries without an index still work, \
                by a scan. See docs/server.md, "Query indexes".

                Lists ID, STATE (ready or building), KEYS and the index (--json: an array).

                Examples:
                  ubiq admin --data srv schema query-indexes iCloud.com.example.Notes --environment production
                  ubiq admin --data srv schema query-indexes iCloud.com.example.Notes --environment production --add 'Note(=folder,-modified)'
                """)
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: SchemaAdmin
        @Argument(help: "The container identifier.") var container: String
        @Option(help: "development (default) or production.") var environment = "development"
        @Option(help: "Add and build an index, like 'Item(=cat,+rank)' (system fields by their ___ names, like -___modTime).") var add: String?
        @Option(help: "Drop the index with this ID.") var drop: Int64?
        @Flag(help: "Print JSON.") var json = false

        func validate() throws {
            _ = try adminEnvironment(environment)
            if add != nil, drop != nil { throw ValidationError("--add and --drop: give one at a time") }
        }

        func run() async throws {
            let environment = try adminEnvironment(self.environment)
            try await Admin.withAdmin(store, parent: group.admin.store, command: "schema query-indexes") { admin in
                if let add {
                    let info = try await admin.addQueryIndex(container: container, environment: environment, spelled: add)
                    CLI.printLine("added query index \(info.index.id) \(info.index.definition): \(info.keys) keys")
                    return
                }
                if let drop {
                    try await admin.dropQueryIndex(container: container, environment: environment, id: drop)
                    CLI.printLine("dropped query index \(drop)")
                    return
                }
                let indexes = try await admin.queryIndexes(container: container, environment: environment)
                if json {
                    CLI.printLine("[" + indexes.map {
                        CLI.jsonObject([("id", $0.index.id), ("recordType", $0.index.definition.recordType), ("index", $0.index.definition.description),
                                        ("ready", $0.index.ready), ("keys", $0.keys)])
                    }.joined(separator: ",") + "]")
                    return
                }
                CLI.printLine("ID\tSTATE\tKEYS\tINDEX")
                for info in indexes {
                    CLI.printLine("\(info.index.id)\t\(info.index.ready ? "ready" : "building")\t\(info.keys)\t\(info.index.definition)")
                }
            }
        }
    }
}
