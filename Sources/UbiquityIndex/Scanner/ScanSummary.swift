/// What a tree scan found besides the records it handed on.
package struct ScanSummary: Sendable, Hashable {
    /// Items handed on (files, folders and symbolic links; not the root itself).
    package var itemCount = 0
    /// How many of them are folders.
    package var directoryCount = 0
    /// Entries skipped because their names are not valid UTF-8.
    package var invalidNameCount = 0
    /// The folders (absolute paths) holding such entries: sync looks at them to report them.
    package var foldersWithInvalidNames: Set<String> = []
    /// Entries skipped because they vanished while the scan ran.
    package var vanishedCount = 0
    /// Problems worth telling the user (unreadable folders, the first few invalid names).
    package var warnings: [ScanWarning] = []

    /// An empty summary.
    package init() {}
}

/// A problem a scan worked around.
package struct ScanWarning: Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    package enum Kind: String, Sendable, Hashable {
        /// A folder could not be read (`EACCES`/`EPERM`): its contents are not indexed.
        case permissionDenied
        /// A name is not valid UTF-8: the item is not indexed.
        case invalidName
        /// Another error reading a folder or an entry.
        case ioError
    }

    /// What went wrong.
    package var kind: Kind
    /// The path (for invalid names, with the bad bytes escaped as `\xNN`).
    package var path: String
    /// Details.
    package var message: String

    /// A warning.
    package init(kind: Kind, path: String, message: String) {
        self.kind = kind
        self.path = path
        self.message = message
    }

    /// `"kind: path: message"`.
    package var description: String { "\(kind.rawValue): \(path): \(message)" }
}
