// SPDX-License-Identifier: Apache-2.0

/// Several ``RecordChangeObserver``s as one, told in order: inside the transaction each in turn
/// (the first error rolls everything back), after the commit each in turn.
package struct RecordChangeObservers: RecordChangeObserver {
    /// The observers, in the order they are told.
    package let observers: [any RecordChangeObserver]

    /// Makes a composite of `observers`.
    package init(_ observers: [any RecordChangeObserver]) {
        self.observers = observers
    }

    package func changesWillCommit(_ changes: [StoreChange], in tx: any RecordStoreTransaction) async throws {
        for observer in observers { try await observer.changesWillCommit(changes, in: tx) }
    }

    package func changesDidCommit(_ changes: [StoreChange]) async {
        for observer in observers { await observer.changesDidCommit(changes) }
    }
}
