// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity
import UbiquityCloudKit

/// `ubiq records zones list|create|delete`.
struct RecordsZones: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "zones",
        abstract: "List, create and delete record zones.",
        discussion: """
            Custom zones live in the private database (the public database has only the default \
            zone). Deleting a zone deletes all its records for good.

            Examples:
              ubiq records zones list --database private
              ubiq records zones create Notes Photos --database private
              ubiq records zones delete Photos --database private --json
            """,
        subcommands: [RecordsZonesList.self, RecordsZonesCreate.self, RecordsZonesDelete.self]
    )
}

/// `ubiq records zones list`.
struct RecordsZonesList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the database's zones.",
        discussion: """
            Prints one zone name per line; with --json, CloudKit's zone dictionaries.

            Examples:
              ubiq records zones list --database private
              ubiq records zones list --json
            """
    )

    @Flag(help: "Print zone dictionaries, one per line.")
    var json = false

    @OptionGroup var connection: CloudKitConnectionOptions

    func run() async throws {
        do {
            for zone in try await connection.makeDatabase().allRecordZones() {
                CLI.printLine(json ? zone.cloudKitJSON() : zone.zoneID.zoneName)
            }
        } catch {
            throw RecordsCLI.fail(error, command: "zones list")
        }
    }
}

/// `ubiq records zones create NAME…`.
struct RecordsZonesCreate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Create zones.",
        discussion: """
            Creating a zone that exists is harmless.

            Examples:
              ubiq records zones create Notes --database private
            """
    )

    @Argument(help: "Zone names.")
    var names: [String]

    @Flag(help: "Print zone dictionaries, one per line.")
    var json = false

    @OptionGroup var connection: CloudKitConnectionOptions

    func validate() throws {
        if names.isEmpty { throw ValidationError("give at least one zone name") }
    }

    func run() async throws {
        do {
            let zones = names.map(RecordZone.init(zoneName:))
            let (saved, _) = try await connection.makeDatabase().modifyRecordZones(saving: zones, deleting: [])
            try RecordsZones.report(zones.map(\.zoneID), results: saved, command: "zones create") { zone in
                CLI.printLine(json ? zone.cloudKitJSON() : "created \(zone.zoneID.zoneName)")
            }
        } catch {
            throw RecordsCLI.fail(error, command: "zones create")
        }
    }
}

/// `ubiq records zones delete NAME…`.
struct RecordsZonesDelete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete zones and all their records.",
        discussion: """
            Examples:
              ubiq records zones delete Photos --database private
            """
    )

    @Argument(help: "Zone names.")
    var names: [String]

    @Flag(help: "Print the deleted zone IDs as JSON, one per line.")
    var json = false

    @OptionGroup var connection: CloudKitConnectionOptions

    func validate() throws {
        if names.isEmpty { throw ValidationError("give at least one zone name") }
        if names.contains(RecordZone.ID.defaultZoneName) { throw ValidationError("the default zone cannot be deleted") }
    }

    func run() async throws {
        do {
            let ids = names.map { RecordZone.ID(zoneName: $0) }
            let (_, deleted) = try await connection.makeDatabase().modifyRecordZones(saving: [], deleting: ids)
            try RecordsZones.report(ids, results: deleted, command: "zones delete") { (_: Void) in }
            for id in ids where (try? deleted[id]?.get()) != nil {
                CLI.printLine(json ? "{\"zoneID\":{\"zoneName\":\(CLI.jsonString(id.zoneName))},\"deleted\":true}" : "deleted \(id.zoneName)")
            }
        } catch {
            throw RecordsCLI.fail(error, command: "zones delete")
        }
    }
}

extension RecordsZones {
    /// Prints the successes with `success`, the failures on stderr, and throws the exit code
    /// of the first failure.
    static func report<Value>(_ ids: [RecordZone.ID], results: [RecordZone.ID: Result<Value, any Error>], command: String,
                              success: (Value) -> Void) throws {
        var failed: CloudKitError?
        for id in ids {
            switch results[id] {
            case .success(let value)?: success(value)
            case .failure(let error)?:
                let error = RecordsCLI.cloudKitError(error)
                failed = failed ?? error
                FileHandle.standardError.write(Data("ubiq records \(command): \(id.zoneName): \(RecordsCLI.message(for: error))\n".utf8))
            case nil: break
            }
        }
        if let failed { throw RecordsCLI.exitCode(for: failed) }
    }
}
