// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization

/// The sign-in endpoints' guard against password guessing: per account name and address
/// (5 free failures), and per address for any account (20), with ``SignInBackoff``'s rules.
///
/// An attempt counts as a failure from the moment it is let through (``begin(user:address:)``,
/// one check-and-count in one write transaction) until its outcome is known
/// (``finish(user:address:success:)``): concurrent guesses cannot all pass the check before any
/// is counted, so no more than the free failures are ever evaluated at once. The counts live in
/// the record store (issue 24, finding 6): a restart keeps them, and every server process
/// sharing the store counts together. Times are the wall clock's, so they mean the same in
/// every process.
package final class SignInGuard: Sendable {
    let store: any RecordStore
    let perAccount = SignInBackoff(freeFailures: 5)
    let perAddress = SignInBackoff(freeFailures: 20)
    let clock: @Sendable () -> Double
    /// Attempts begun by this process: every 64th also forgets the store's quiet keys.
    let attempts = Atomic<Int>(0)

    /// A guard over `store`; `clock` gives seconds since 1970 (injectable for tests).
    package init(store: any RecordStore, clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.store = store
        self.clock = clock
    }

    /// The key of `user`'s attempts from `address` (an address holds no line break, so the
    /// user name after it cannot make two keys alike; no NUL: SQLite text stops there).
    static func accountKey(_ user: String, _ address: String) -> String { "account\n" + address + "\n" + user }
    /// The key of `address`'s attempts for any account.
    static func addressKey(_ address: String) -> String { "address\n" + address }

    /// Whole seconds to wait before `user` may try again from `address`, or nil.
    package func wait(user: String, address: String) async throws -> Int? {
        let now = clock()
        let (account, address) = try await store.read { tx in
            (try await tx.signInBackoff(Self.accountKey(user, address), forUpdate: false), try await tx.signInBackoff(Self.addressKey(address), forUpdate: false))
        }
        return Self.seconds(account, address, now: now)
    }

    static func seconds(_ account: SignInBackoff.Entry?, _ address: SignInBackoff.Entry?, now: Double) -> Int? {
        let seconds = max(SignInBackoff.wait(account, now: now) ?? 0, SignInBackoff.wait(address, now: now) ?? 0)
        return seconds > 0 ? Int(seconds.rounded(.up)) : nil
    }

    /// Lets an attempt of `user` from `address` through and counts it as a failure until
    /// ``finish(user:address:success:)`` says otherwise; or, when they must wait, the whole
    /// seconds to wait (nothing counted).
    package func begin(user: String, address: String) async throws -> Int? {
        let now = clock()
        let prune = attempts.wrappingAdd(1, ordering: .relaxed).newValue.isMultiple(of: 64)
        let perAccount = self.perAccount, perAddress = self.perAddress
        return try await store.write { tx in
            if prune { try await tx.pruneSignInBackoffs(quietSince: now - perAccount.maximumDelay, now: now) }
            let accountKey = Self.accountKey(user, address), addressKey = Self.addressKey(address)
            let account = try await tx.signInBackoff(accountKey, forUpdate: true)
            let byAddress = try await tx.signInBackoff(addressKey, forUpdate: true)
            if let seconds = Self.seconds(account, byAddress, now: now) { return seconds }
            try await tx.setSignInBackoff(accountKey, perAccount.failing(account, now: now))
            try await tx.setSignInBackoff(addressKey, perAddress.failing(byAddress, now: now))
            return nil
        }
    }

    /// The outcome of an attempt let through by ``begin(user:address:)``: a wrong password's
    /// wait runs from now, the answer; a right password forgets the account's failures and takes
    /// back the address's count of this attempt (a guesser's own account must not reset the
    /// address's other failures).
    package func finish(user: String, address: String, success: Bool) async throws {
        let perAccount = self.perAccount, perAddress = self.perAddress
        guard success else {
            let now = clock()
            try await store.write { tx in
                let accountKey = Self.accountKey(user, address), addressKey = Self.addressKey(address)
                try await tx.setSignInBackoff(accountKey, perAccount.confirmingFailure(try await tx.signInBackoff(accountKey, forUpdate: true), now: now))
                try await tx.setSignInBackoff(addressKey, perAddress.confirmingFailure(try await tx.signInBackoff(addressKey, forUpdate: true), now: now))
            }
            return
        }
        try await store.write { tx in
            let addressKey = Self.addressKey(address)
            try await tx.setSignInBackoff(Self.accountKey(user, address), nil)
            try await tx.setSignInBackoff(addressKey, perAddress.forgiving(try await tx.signInBackoff(addressKey, forUpdate: true)))
        }
    }
}
