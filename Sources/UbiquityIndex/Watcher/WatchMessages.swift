import UbiquityCore
import Foundation

/// What the watcher tells the user when events were or may have been lost.
enum WatchMessages {
    /// A value read from `/proc/sys/fs/inotify/<name>`, if readable.
    static func procLimit(_ name: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/sys/fs/inotify/" + name, encoding: .utf8) else { return nil }
        return Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// The message of an `IN_Q_OVERFLOW` rescan of `root`.
    static func overflow(root: String) -> String {
        let current = procLimit("max_queued_events")
        let suggested = max((current ?? 16_384) * 4, 65_536)
        let now = current.map { " (now \($0))" } ?? ""
        return "inotify queue overflowed: rescanning \(root); raise fs.inotify.max_queued_events\(now) "
            + "(sysctl -w fs.inotify.max_queued_events=\(suggested))"
    }

    /// The message of a watch that could not be added at `path` (`ENOSPC` or `ENOMEM`).
    static func watchLimit(path: String, errno code: Int32, maxUserWatches: Int) -> String {
        let limit = maxUserWatches > 0 ? "\(maxUserWatches)" : "unknown"
        let suggested = max(maxUserWatches * 2, 524_288)
        let cause = code == ENOMEM ? "the kernel could not allocate an inotify watch"
                                   : "the inotify watch limit fs.inotify.max_user_watches (\(limit)) is reached"
        return "cannot watch \(path): \(cause); changes below it are only seen by rescans. "
            + "Raise fs.inotify.max_user_watches (currently \(limit)): sysctl -w fs.inotify.max_user_watches=\(suggested) "
            + "(persist it in /etc/sysctl.d/)"
    }

    /// The message of a root that was deleted or moved away.
    static func feedOverflow(root: String) -> String {
        "more changes than the mount's change queue holds (\(FolderChangeFeed.capacity)): rescanning \(root)"
    }

    static func rootChanged(root: String) -> String {
        "\(root) was deleted or moved: it is no longer watched; watch it again once it is back"
    }
}
