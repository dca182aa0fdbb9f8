// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
@testable import UbiquityServer

/// An actor a transaction body hops to and back from.
private actor Ledger {
    private(set) var entries: [String] = []
    func note(_ entry: String) { entries.append(entry) }
}

private struct Refused: Error {}

@Suite struct SQLiteTransactionExecutorTests {
    @Test func runsABodyWithActorHopsToItsEnd() throws {
        let ledger = Ledger()
        let value = try SQLiteTransactionExecutor.run { () async throws -> Int in
            var sum = 0
            for step in 1...100 {
                await ledger.note("step \(step)")
                sum += step
            }
            return sum
        }
        #expect(value == 5_050)
        #expect(throws: Refused.self) {
            try SQLiteTransactionExecutor.run { () async throws -> Int in
                await ledger.note("before the error")
                throw Refused()
            }
        }
    }

    /// A body that awaits something else between its statements (an actor) still runs them on
    /// the transaction's connection: its writes commit together, or, when it throws after the
    /// hop, none do.
    @Test func aStoreTransactionMayAwaitAnActorBetweenItsStatements() async throws {
        try await StoreFixture.withStore(.sqlite) { store in
            let ledger = Ledger()
            try await store.write { tx in
                try await tx.addContainer("iCloud.first", createdAt: 1)
                await ledger.note("between")
                try await tx.addContainer("iCloud.second", createdAt: 2)
            }
            await #expect(throws: Refused.self) {
                try await store.write { tx in
                    try await tx.addContainer("iCloud.rolled-back", createdAt: 3)
                    await ledger.note("before the error")
                    throw Refused()
                }
            }
            let containers = try await store.read { tx in
                await ledger.note("reading")
                return try await tx.containers()
            }
            #expect(containers == ["iCloud.first", "iCloud.second"])
            #expect(await ledger.entries == ["between", "before the error", "reading"])
        }
    }
}
