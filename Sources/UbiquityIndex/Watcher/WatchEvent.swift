/// One inotify event resolved to an absolute path: what ``WatchCoalescer`` consumes.
struct WatchEvent: Sendable, Hashable {
    /// What happened to the item.
    enum Kind: Sendable, Hashable {
        /// `IN_CREATE`: the name did not exist just before.
        case created
        /// `IN_MODIFY`, `IN_CLOSE_WRITE` or `IN_ATTRIB`.
        case modified
        /// A file opened for writing was closed (`IN_CLOSE_WRITE`): its write is complete.
        case closedAfterWriting
        /// `IN_DELETE`.
        case deleted
        /// `IN_MOVED_FROM`, paired with a `movedTo` of the same cookie.
        case movedFrom(cookie: UInt32)
        /// `IN_MOVED_TO`.
        case movedTo(cookie: UInt32)
    }

    /// What happened.
    var kind: Kind
    /// The item's absolute path.
    var path: String
    /// Whether the item is a folder (`IN_ISDIR`).
    var isDirectory: Bool

    /// An event of `kind` on `path`.
    init(_ kind: Kind, _ path: String, isDirectory: Bool = false) {
        self.kind = kind
        self.path = path
        self.isDirectory = isDirectory
    }
}
