// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A ubiquity container identifier: reverse-DNS, such as `iCloud.com.example.Notes`.
///
/// Valid identifiers have at least two dot-separated labels made of ASCII letters, digits,
/// `-` and `_`, no empty label, no label starting with `-`, and at most 255 bytes.
public struct ContainerIdentifier: Hashable, Sendable, Codable, CustomStringConvertible, Comparable {
    /// The identifier as written, e.g. `iCloud.com.example.Notes`.
    public let rawValue: String

    /// Validates `rawValue`, throwing `invalidArgument` with the reason when it is not reverse-DNS.
    public init(_ rawValue: String) throws {
        func fail(_ why: String) -> UbiquityError {
            UbiquityError(.invalidArgument,
                          "container identifier '\(rawValue)' is invalid: \(why); expected reverse-DNS such as 'iCloud.com.example.Notes'")
        }
        guard !rawValue.isEmpty else { throw fail("it is empty") }
        guard rawValue.utf8.count <= 255 else { throw fail("it is longer than 255 bytes") }
        let labels = rawValue.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2 else { throw fail("it needs at least two dot-separated parts") }
        for label in labels {
            guard !label.isEmpty else { throw fail("it has an empty part") }
            guard label.first != "-" else { throw fail("part '\(label)' starts with '-'") }
            for scalar in label.unicodeScalars {
                let ok = scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || scalar == "-" || scalar == "_")
                guard ok else { throw fail("character '\(scalar)' is not allowed (letters, digits, '-' and '_' only)") }
            }
        }
        self.rawValue = rawValue
    }

    /// The folder name used on disk: dots become `~`, as in `~/Library/Mobile Documents` on macOS.
    public var directoryName: String { rawValue.replacingOccurrences(of: ".", with: "~") }
    /// The identifier.
    public var description: String { rawValue }
    /// Orders by the raw value.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Decodes and validates.
    public init(from decoder: any Decoder) throws {
        try self.init(decoder.singleValueContainer().decode(String.self))
    }
    /// Encodes the raw value.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
