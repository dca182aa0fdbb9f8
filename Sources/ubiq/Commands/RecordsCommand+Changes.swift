// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Synchronization
import Ubiquity
import UbiquityCloudKit

/// `ubiq records changes`: what changed in a zone (or which zones changed) since a token.
struct RecordsChanges: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "changes",
        abstract: "Fetch the records changed in a zone, or the zones changed in the database, since a token.",
        discussion: """
            Without --token, everything. Fetches every page unless --once; prints the changed \
            records, the deleted ones, and last the token to pass next time. With --json: one \
            record dictionary per changed record, a tombstone {"recordName","deleted":true,…} per \
            deletion, then {"syncToken":…,"moreComing":…}. --zones reports which zones changed \
            (changes/database) instead: {"zoneID":…,"deleted":…} lines, then the token. Change \
            fetching works in the private and shared databases, on custom zones. An expired token \
            exits with 1 and says to start over without one.

            Examples:
              ubiq records changes --zone Notes --database private
              ubiq records changes --zone Notes --token "$(cat notes.token)" --json
              ubiq records changes --zones --database private --token "$TOKEN"
            """
    )

    @Option(help: "The token printed by the previous run.")
    var token: String?

    @Option(help: "The most changes per page.")
    var limit: Int?

    @Flag(help: "Fetch one page only (the token line says whether more is coming).")
    var once = false

    @Flag(help: "Report which zones changed (changes/database) instead of the records of --zone.")
    var zones = false

    @Option(help: "Fetch only these fields (comma-separated).")
    var keys: String?

    @Flag(help: "Print JSON lines.")
    var json = false

    @OptionGroup var connection: CloudKitConnectionOptions

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit \(limit): expected a number ≥ 1") }
        if let token, token.isEmpty { throw ValidationError("--token: expected the token a previous run printed (leave it out to start over)") }
    }

    func run() async throws {
        do {
            let database = try connection.makeDatabase()
            if zones {
                try await databaseChanges(database)
            } else {
                try await zoneChanges(database)
            }
        } catch {
            throw RecordsCLI.fail(error, command: "changes")
        }
    }

    private func printToken(_ token: ServerChangeToken, moreComing: Bool) {
        if json {
            CLI.printLine(CLI.jsonObject([("syncToken", token.rawValue), ("moreComing", moreComing)]))
        } else {
            CLI.printLine("token: \(token.rawValue)\(moreComing ? " (more changes are waiting: run again with this token)" : "")")
        }
    }

    private func zoneChanges(_ database: CloudDatabase) async throws {
        let zone = connection.zoneID
        let operation = FetchRecordZoneChangesOperation(recordZoneIDs: [zone], configurationsByRecordZoneID: [
            zone: .init(previousServerChangeToken: token.map(ServerChangeToken.init(rawValue:)), resultsLimit: limit ?? 0,
                        desiredKeys: RecordsCLI.keys(keys)),
        ])
        operation.fetchAllChanges = !once
        let json = self.json
        let final = Mutex<FetchRecordZoneChangesOperation.ZoneResult?>(nil)
        operation.recordWasChangedBlock = { id, result in
            switch result {
            case .success(let record):
                if json { RecordsCLI.print(record, json: true) } else { CLI.printLine("changed " + RecordsCLI.summary(record)) }
            case .failure(let error):
                FileHandle.standardError.write(Data("ubiq records changes: \(id.recordName): \(RecordsCLI.message(for: RecordsCLI.cloudKitError(error)))\n".utf8))
            }
        }
        operation.recordWithIDWasDeletedBlock = { id, type in
            CLI.printLine(json ? id.cloudKitTombstoneJSON(recordType: type.isEmpty ? nil : type) : "deleted \(type.isEmpty ? "" : type + " ")\(id.recordName)")
        }
        operation.recordZoneFetchResultBlock = { _, result in final.withLock { $0 = try? result.get() } }
        operation.database = database
        do {
            try await operation.run()
        } catch let error as CloudKitError where error.code == .partialFailure {
            throw error.partialErrorsByZoneID[zone] ?? error
        }
        if let result = final.withLock({ $0 }) { printToken(result.serverChangeToken, moreComing: result.moreComing) }
    }

    private func databaseChanges(_ database: CloudDatabase) async throws {
        var token = self.token.map(ServerChangeToken.init(rawValue:))
        while true {
            let page = try await database.databaseChanges(since: token, resultsLimit: limit)
            for change in page.modifications {
                CLI.printLine(json ? "{\"zoneID\":{\"zoneName\":\(CLI.jsonString(change.zoneID.zoneName))},\"deleted\":false}" : "changed \(change.zoneID.zoneName)")
            }
            for deletion in page.deletions {
                CLI.printLine(json ? "{\"zoneID\":{\"zoneName\":\(CLI.jsonString(deletion.zoneID.zoneName))},\"deleted\":true\(deletion.purged ? ",\"purged\":true" : "")}"
                                   : "\(deletion.purged ? "purged" : "deleted") \(deletion.zoneID.zoneName)")
            }
            let moved = page.changeToken != token
            token = page.changeToken
            if page.moreComing, !once, moved { continue }
            printToken(page.changeToken, moreComing: page.moreComing)
            return
        }
    }
}
