// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import UbiquityCore

/// The presenters registered in this process, with the id and purpose each has in every engine.
package final class PresenterRegistry: Sendable {
    package struct Entry: Sendable {
        package var id: UInt64
        package var purpose: String
        package var endpoint: LocalPresenterEndpoint
        package var path: String?
    }
    private struct State {
        var entries: [ObjectIdentifier: Entry] = [:]
        var purposes: [ObjectIdentifier: (purpose: String, presenter: WeakPresenter)] = [:]
        var nextID: UInt64 = 1
    }
    private final class WeakPresenter: @unchecked Sendable {  // @unchecked because the weak reference is only read under the registry's lock
        weak var value: AnyObject?
        init(_ value: AnyObject) { self.value = value }
    }
    private let state = Mutex(State())

    package static let shared = PresenterRegistry()

    /// The purpose identifier shared by every coordinator made with `presenter`.
    package static func purposeIdentifier(of presenter: any FilePresenter) -> String {
        shared.purpose(of: presenter)
    }

    package func purpose(of presenter: any FilePresenter) -> String {
        let key = ObjectIdentifier(presenter)
        return state.withLock { state in
            if let entry = state.entries[key] { return entry.purpose }
            if let known = state.purposes[key], known.presenter.value === presenter { return known.purpose }
            let purpose = "presenter-" + UUID().uuidString
            state.purposes = state.purposes.filter { $0.value.presenter.value != nil }
            state.purposes[key] = (purpose, WeakPresenter(presenter))
            return purpose
        }
    }

    /// Adds `presenter`, or returns nil when it is already registered.
    package func add(_ presenter: any FilePresenter) -> Entry? {
        let purpose = purpose(of: presenter)
        let path = presenter.presentedItemURL.flatMap { try? CanonicalPath.canonicalize($0.path) }
        return state.withLock { state in
            let key = ObjectIdentifier(presenter)
            guard state.entries[key] == nil else { return nil }
            let entry = Entry(id: state.nextID, purpose: purpose, endpoint: LocalPresenterEndpoint(presenter: presenter), path: path)
            state.nextID += 1
            state.entries[key] = entry
            return entry
        }
    }

    /// Removes `presenter`; returns its entry if it was registered.
    package func remove(_ presenter: any FilePresenter) -> Entry? {
        state.withLock { $0.entries.removeValue(forKey: ObjectIdentifier(presenter)) }
    }

    /// The entry with engine id `id`.
    package func entry(id: UInt64) -> Entry? {
        state.withLock { $0.entries.values.first { $0.id == id } }
    }

    /// Re-reads `presentedItemURL`; returns the new canonical path when it changed.
    package func refreshPath(of presenter: any FilePresenter) -> (Entry, String?)? {
        let path = presenter.presentedItemURL.flatMap { try? CanonicalPath.canonicalize($0.path) }
        return state.withLock { state in
            let key = ObjectIdentifier(presenter)
            guard var entry = state.entries[key], entry.path != path else { return nil }
            entry.path = path
            state.entries[key] = entry
            return (entry, path)
        }
    }

    /// Records a path the engine computed (after a move).
    package func setPath(id: UInt64, path: String?) {
        state.withLock { state in
            if let key = state.entries.first(where: { $0.value.id == id })?.key { state.entries[key]!.path = path }
        }
    }

    /// Every registered presenter.
    package var all: [any FilePresenter] { state.withLock { $0.entries.values.sorted { $0.id < $1.id }.map(\.endpoint.presenter) } }
    /// Every registered entry.
    package var entries: [Entry] { state.withLock { $0.entries.values.sorted { $0.id < $1.id } } }
}
