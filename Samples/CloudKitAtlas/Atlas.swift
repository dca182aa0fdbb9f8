// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCloudKit

/// The tour: every operation of Apple's CloudKitAtlas, one step each, in the signed-in user's
/// private database (the user's own record in the public one). Steps that need an earlier
/// step's result fail with "skipped" when it failed. Everything made carries ``run`` in its
/// name and is deleted by the last step.
@MainActor
final class Atlas {
    /// The record type of the sample's items, as in Apple's sample.
    static let itemType = "Items"

    let container: CloudContainer
    let database: CloudDatabase
    let report: Report
    /// The address `discover-email` looks up (the caller's own when nil).
    let discoverEmail: String?
    /// This run's suffix (8 hex digits), in every record, zone and subscription name.
    let run: String
    /// Scratch files (the asset's content and its download).
    let scratch: URL

    // What earlier steps found or made.
    var userRecordID: Record.ID?
    var callerEmail: String?
    var item: Record?
    var placesZone: RecordZone.ID?
    var changesZone: RecordZone.ID?
    var changesToken: ServerChangeToken?
    var changesRecords: [Record.ID] = []
    var subscriptionID: String?
    var notificationRecord: Record.ID?
    var parent: Record?
    var children: [Record.ID] = []
    var assetRecord: Record.ID?
    var assetContent: Data?
    /// Zones and default-zone records to delete at the end.
    var madeZones: [RecordZone.ID] = []
    var madeRecords: [Record.ID] = []

    init(container: CloudContainer, report: Report, discoverEmail: String?) {
        self.container = container
        database = container.privateCloudDatabase
        self.report = report
        self.discoverEmail = discoverEmail
        run = String(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(8)).lowercased()
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("CloudKitAtlas-\(run)", isDirectory: true)
    }

    /// Runs every step in order, then cleans up.
    func run() async {
        // User identity
        await step("user-record-id", fetchUserRecordID)
        await step("user-record", fetchUserRecord)
        await step("caller-identity", fetchCallerIdentity)
        // Records
        await step("save-record", saveRecord)
        await step("fetch-record", fetchRecord)
        await step("update-record", updateRecord)
        // Queries
        await step("query-records", saveQueryRecords)
        await step("query-equality", queryEquality)
        await step("query-dynamic-key", queryDynamicKey)
        await step("query-comparison", queryComparison)
        await step("query-near", queryNear)
        await step("query-tokens", queryTokens)
        await step("query-compound", queryCompound)
        // Subscriptions and notifications
        await step("subscription-save", saveSubscription)
        await step("subscription-fetch", fetchSubscriptions)
        await step("subscription-notification", receiveNotification)
        // A custom zone and change tokens
        await step("zone-create", createZone)
        await step("zone-changes", fetchZoneChanges)
        await step("zone-changes-token", fetchZoneChangesWithToken)
        // References
        await step("reference-save", saveReferences)
        await step("reference-query", queryReferences)
        await step("reference-cascade-delete", cascadeDelete)
        // Assets
        await step("asset-save", saveAsset)
        await step("asset-download", downloadAsset)
        // Discovery
        await step("discoverability", optInToDiscovery)
        await step("discover-email", discoverByEmail)
        await step("cleanup", cleanUp)
    }

    /// Runs one step and reports it: its detail when it returns, the error when it throws.
    func step(_ name: String, _ body: () async throws -> String) async {
        do {
            report.ok(name, try await body())
        } catch let failure as AtlasFailure {
            report.fail(name, failure.description)
        } catch {
            report.fail(name, "\(error)")
        }
    }

    /// The value an earlier step left, or a "skipped" failure naming that step.
    func need<T>(_ value: T?, from step: String) throws -> T {
        guard let value else { throw AtlasFailure("skipped: needs \(step), which failed") }
        return value
    }
}

/// Why a step failed (other than an error the client threw).
struct AtlasFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Fails the step with `message` unless `condition` holds.
func check(_ condition: Bool, _ message: @autoclosure () -> String) throws {
    if !condition { throw AtlasFailure(message()) }
}
