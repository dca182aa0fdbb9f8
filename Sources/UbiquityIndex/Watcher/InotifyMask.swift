import CInotifyTools

/// The inotify mask bits the watcher uses, as `UInt32`.
enum InotifyMask {
    static let modify = UInt32(truncatingIfNeeded: IN_MODIFY)
    static let attrib = UInt32(truncatingIfNeeded: IN_ATTRIB)
    static let closeWrite = UInt32(truncatingIfNeeded: IN_CLOSE_WRITE)
    static let movedFrom = UInt32(truncatingIfNeeded: IN_MOVED_FROM)
    static let movedTo = UInt32(truncatingIfNeeded: IN_MOVED_TO)
    static let create = UInt32(truncatingIfNeeded: IN_CREATE)
    static let delete = UInt32(truncatingIfNeeded: IN_DELETE)
    static let deleteSelf = UInt32(truncatingIfNeeded: IN_DELETE_SELF)
    static let moveSelf = UInt32(truncatingIfNeeded: IN_MOVE_SELF)
    static let overflow = UInt32(truncatingIfNeeded: IN_Q_OVERFLOW)
    static let ignored = UInt32(truncatingIfNeeded: IN_IGNORED)
    static let isDirectory = UInt32(truncatingIfNeeded: IN_ISDIR)
    static let onlyDirectory = UInt32(truncatingIfNeeded: IN_ONLYDIR)
    static let dontFollow = UInt32(truncatingIfNeeded: IN_DONT_FOLLOW)
    static let excludeUnlinked = UInt32(truncatingIfNeeded: IN_EXCL_UNLINK)

    /// The mask every folder is watched with.
    static let folderWatch: UInt32 = create | delete | modify | closeWrite | attrib | movedFrom | movedTo
        | deleteSelf | moveSelf | dontFollow | onlyDirectory | excludeUnlinked

    /// The coalescer's view of an event with `mask`, or `nil` for events it does not consume.
    static func kind(of mask: UInt32, cookie: UInt32) -> WatchEvent.Kind? {
        if mask & create != 0 { return .created }
        if mask & delete != 0 { return .deleted }
        if mask & movedFrom != 0 { return .movedFrom(cookie: cookie) }
        if mask & movedTo != 0 { return .movedTo(cookie: cookie) }
        if mask & closeWrite != 0 { return .closedAfterWriting }
        if mask & (modify | attrib) != 0 { return .modified }
        return nil
    }
}

/// One event copied out of libinotifytools' static buffer.
struct RawInotifyEvent: Sendable {
    var wd: Int32
    var mask: UInt32
    var cookie: UInt32
    var name: String

    /// Copies `event` (which libinotifytools overwrites on its next call).
    init(_ event: UnsafeMutablePointer<inotify_event>) {
        wd = event.pointee.wd
        mask = event.pointee.mask
        cookie = event.pointee.cookie
        if event.pointee.len > 0 {
            let bytes = UnsafeRawPointer(event).advanced(by: MemoryLayout<inotify_event>.size)
            name = String(cString: bytes.assumingMemoryBound(to: CChar.self))
        } else {
            name = ""
        }
    }

    /// A synthetic event (tests).
    init(wd: Int32, mask: UInt32, cookie: UInt32 = 0, name: String = "") {
        self.wd = wd
        self.mask = mask
        self.cookie = cookie
        self.name = name
    }
}
