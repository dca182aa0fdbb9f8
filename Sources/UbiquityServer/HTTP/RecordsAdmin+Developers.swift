// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// A container's developers: the accounts that may open it in the web's Console (records,
/// schema and its deployment, users, subscriptions, the request log and telemetry), as
/// CloudKit's team members open a container in CloudKit Console.
extension RecordsAdmin {
    /// The container's developers (account names), after adding `add` and removing `remove`.
    package func developers(container: String, add: [String] = [], remove: [String] = []) async throws -> [String] {
        try RecordsAdmin.validate(container: container)
        for name in add + remove { try RecordsAdmin.validate(userName: name) }
        return try await store.write { tx in
            try await RecordsAdmin.requireContainer(container, tx: tx)
            let console = try tx.consoleStore()
            for name in add {
                let account = try await RecordsAdmin.account(named: name, in: tx)
                try await console.setDeveloper(true, container: container, accountID: account.id, at: RecordsAdmin.now)
            }
            for name in remove {
                let account = try await RecordsAdmin.account(named: name, in: tx)
                try await console.setDeveloper(false, container: container, accountID: account.id, at: RecordsAdmin.now)
            }
            return try await console.developers(container: container).map(\.name)
        }
    }
}
