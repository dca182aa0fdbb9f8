// SPDX-License-Identifier: Apache-2.0

/// A server change token (`CKServerChangeToken`): where a change fetch got to. Opaque: keep
/// it (it is `Codable`, encoded as one string) and hand it back on the next fetch; never
/// build one from parts.
public struct ServerChangeToken: Sendable, Hashable, Codable, RawRepresentable, CustomStringConvertible {
    /// The token as the server wrote it (the wire `syncToken`).
    public let rawValue: String

    /// Wraps a token the server issued earlier (for example one printed by `ubiq records changes`).
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Decodes from a single string.
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    /// Encodes as a single string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// The raw token.
    public var description: String { rawValue }
}
