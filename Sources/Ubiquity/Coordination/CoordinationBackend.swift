// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// Where claims go: the in-process engine, or the daemon through its socket.
package protocol CoordinationBackend: Sendable {
    func request(_ request: ClaimRequest, completion: @escaping CoordinationEngine.Completion)
    func finish(_ id: UInt64)
    func cancel(_ id: UInt64)
    func itemDidMove(from old: String, to new: String, purpose: String)
    func versionEvent(_ kind: VersionEventKind, path: String, versionID: String)
    func ubiquityAttributesChanged(path: String, keys: [String])
}

extension CoordinationEngine: CoordinationBackend {}
