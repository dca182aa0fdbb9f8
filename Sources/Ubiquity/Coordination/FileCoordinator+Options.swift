// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Apple's `NSErrorPointer`, which swift-corelibs-foundation lacks, so that
/// `coordinate(readingItemAt:options:error:byAccessor:)` ports unchanged.
public typealias NSErrorPointer = UnsafeMutablePointer<NSError?>?

extension FileCoordinator {
    /// How a coordinated read behaves (`NSFileCoordinator.ReadingOptions`, same raw values).
    public struct ReadingOptions: OptionSet, Sendable, Hashable {
        /// The raw value.
        public let rawValue: UInt
        /// Makes options from a raw value.
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// Do not ask presenters to save before the read.
        public static let withoutChanges = ReadingOptions(rawValue: 1 << 0)
        /// If the item is a symbolic link, coordinate on (and pass) its target.
        public static let resolvesSymbolicLink = ReadingOptions(rawValue: 1 << 1)
        /// Only metadata that is available at once is read.
        public static let immediatelyAvailableMetadataOnly = ReadingOptions(rawValue: 1 << 2)
        /// Read a snapshot (a copy; a zip for folders) and release the claim once it exists.
        public static let forUploading = ReadingOptions(rawValue: 1 << 3)
    }

    /// How a coordinated write behaves (`NSFileCoordinator.WritingOptions`, same raw values).
    /// Use at most one.
    public struct WritingOptions: OptionSet, Sendable, Hashable {
        /// The raw value.
        public let rawValue: UInt
        /// Makes options from a raw value.
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// The write deletes the item: presenters accommodate the deletion.
        public static let forDeleting = WritingOptions(rawValue: 1 << 0)
        /// The write moves the item; for a folder, covers everything inside it.
        public static let forMoving = WritingOptions(rawValue: 1 << 1)
        /// Presenters save first, so that the writer merges with current contents.
        public static let forMerging = WritingOptions(rawValue: 1 << 2)
        /// The write replaces whatever is at the URL (as a deletion, without following moves).
        public static let forReplacing = WritingOptions(rawValue: 1 << 3)
        /// Only content-independent metadata changes.
        public static let contentIndependentMetadataOnly = WritingOptions(rawValue: 1 << 4)
    }
}
