// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire
import UbiquityCore

extension CloudDatabase {
    /// Saves a subscription (`subscriptions/modify`, `create`): a new one, or a replacement of the
    /// one with the same ID. Returns the subscription as the server keeps it. A malformed
    /// predicate or a kind the database does not support throws
    /// ``CloudKitError/Code/invalidArguments``.
    @discardableResult
    public func save(_ subscription: any Subscription) async throws -> any Subscription {
        let (saved, _) = try await modifySubscriptions(saving: [subscription], deleting: [])
        guard let result = saved[subscription.subscriptionID] else {
            throw CloudKitError(.internalError, "the server's answer names no subscription \(subscription.subscriptionID)")
        }
        return try result.get()
    }

    /// The subscription with this ID (`subscriptions/lookup`); ``CloudKitError/Code/unknownItem``
    /// when there is none.
    public func subscription(for id: String) async throws -> any Subscription {
        let response = try await send("subscriptions/lookup", body: .object(["subscriptions": .array([.object(["subscriptionID": .string(id)])])]))
        let items = try CloudContainer.unexpected("subscriptions/lookup") { try WireReader(response, path: "").requiredArray("subscriptions") }
        guard let item = items.first else { throw CloudKitError(.internalError, "the server's answer to subscriptions/lookup is empty") }
        if let error = WireError(json: item) { throw CloudKitError(wire: error) }
        return try CloudContainer.unexpected("subscriptions/lookup") { try SubscriptionCoding.decode(item) }
    }

    /// Every subscription the signed-in user has on this database (`subscriptions/list`).
    public func allSubscriptions() async throws -> [any Subscription] {
        let response = try await send("subscriptions/list", method: "GET", body: nil)
        let items = try CloudContainer.unexpected("subscriptions/list") { try WireReader(response, path: "").array("subscriptions") ?? [] }
        return try items.map { item in
            if let error = WireError(json: item) { throw CloudKitError(wire: error) }
            return try CloudContainer.unexpected("subscriptions/list") { try SubscriptionCoding.decode(item) }
        }
    }

    /// Deletes a subscription; returns its ID. ``CloudKitError/Code/unknownItem`` when there is
    /// none.
    @discardableResult
    public func deleteSubscription(withID id: String) async throws -> String {
        let (_, deleted) = try await modifySubscriptions(saving: [], deleting: [id])
        try deleted[id]?.get()
        return id
    }

    /// Saves and deletes subscriptions in one request per 200, with a result per item
    /// (`CKModifySubscriptionsOperation`). Only whole-request failures throw.
    public func modifySubscriptions(saving subscriptions: [any Subscription], deleting ids: [String]) async throws
        -> (saveResults: [String: Result<any Subscription, any Error>], deleteResults: [String: Result<Void, any Error>]) {
        var saveResults: [String: Result<any Subscription, any Error>] = [:]
        var deleteResults: [String: Result<Void, any Error>] = [:]
        enum Item { case save(any Subscription, JSONValue), delete(String) }
        var items: [Item] = []
        for subscription in subscriptions {
            do {
                items.append(.save(subscription, try SubscriptionCoding.json(subscription)))
            } catch {
                saveResults[subscription.subscriptionID] = .failure(error)
            }
        }
        items += ids.map { .delete($0) }
        var start = 0
        while start < items.count {
            let chunk = Array(items[start..<min(start + WireLimits.operationsPerRequest, items.count)])
            start += chunk.count
            let operations: [JSONValue] = chunk.map { item in
                switch item {
                case .save(_, let json): return .object(["operationType": "create", "subscription": json])
                case .delete(let id): return .object(["operationType": "delete", "subscription": .object(["subscriptionID": .string(id)])])
                }
            }
            let response = try await send("subscriptions/modify", body: .object(["operations": .array(operations)]))
            let results = try CloudContainer.unexpected("subscriptions/modify") { try WireReader(response, path: "").requiredArray("subscriptions") }
            for (index, item) in chunk.enumerated() {
                let element: JSONValue? = results.indices.contains(index) ? results[index] : nil
                switch item {
                case .save(let subscription, _):
                    let id = subscription.subscriptionID
                    guard let element else {
                        saveResults[id] = .failure(CloudKitError(.internalError, "the server's answer has no result for subscription \(id)"))
                        continue
                    }
                    if let error = WireError(json: element) {
                        saveResults[id] = .failure(CloudKitError(wire: error))
                    } else {
                        saveResults[id] = Result { try SubscriptionCoding.decode(element) }
                    }
                case .delete(let id):
                    if let element, let error = WireError(json: element) {
                        deleteResults[id] = .failure(CloudKitError(wire: error))
                    } else {
                        deleteResults[id] = .success(())
                    }
                }
            }
        }
        return (saveResults, deleteResults)
    }
}
