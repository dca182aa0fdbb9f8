// SPDX-License-Identifier: Apache-2.0
import Foundation

extension FileVersion {
    /// How ``FileVersion/addOfItem(at:withContentsOf:options:)`` takes the contents
    /// (`NSFileVersion.AddingOptions`).
    public struct AddingOptions: OptionSet, Sendable, Hashable {
        /// The raw bits.
        public let rawValue: UInt
        /// Makes options from raw bits.
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// Move the contents file into the store instead of copying it (`1 << 0`).
        public static let byMoving = AddingOptions(rawValue: 1 << 0)
    }

    /// How ``FileVersion/replaceItem(at:options:)`` gives the contents
    /// (`NSFileVersion.ReplacingOptions`).
    public struct ReplacingOptions: OptionSet, Sendable, Hashable {
        /// The raw bits.
        public let rawValue: UInt
        /// Makes options from raw bits.
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// Move the contents out of the store (the version is removed) instead of copying (`1 << 0`).
        public static let byMoving = ReplacingOptions(rawValue: 1 << 0)
    }
}
