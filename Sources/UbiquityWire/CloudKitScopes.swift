// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// CloudKit's two environments: separate schema and data.
public enum CloudKitEnvironment: String, Sendable, Hashable, CaseIterable, Codable {
    case development
    case production
}

/// The three databases of a container.
public enum CloudKitDatabaseScope: String, Sendable, Hashable, CaseIterable, Codable {
    /// Readable by everyone with the container's API token; writable by signed-in users.
    case `public`
    /// The signed-in user's own records.
    case `private`
    /// Zones other users shared with the signed-in user.
    case shared
}
