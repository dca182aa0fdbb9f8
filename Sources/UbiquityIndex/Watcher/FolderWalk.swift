import Glibc
import UbiquityCore

/// The outcome of adding one inotify watch.
enum AddWatchOutcome: Sendable, Equatable {
    /// The folder is watched.
    case added
    /// The folder vanished, is not a folder or is not readable: nothing to watch.
    case skipped
    /// The per-user watch limit (`ENOSPC`) or kernel memory (`ENOMEM`) stopped us.
    case limit(Int32)
    /// Another error.
    case failed(Int32)

    /// The outcome for a failed `inotify_add_watch` with `errno` `code`.
    init(errno code: Int32) {
        switch code {
        case ENOSPC, ENOMEM: self = .limit(code)
        case ENOENT, ENOTDIR, EACCES, ELOOP, EPERM: self = .skipped
        default: self = .failed(code)
        }
    }
}

/// A depth-first walk that adds a watch to every folder of a subtree before reading it, so that
/// anything created afterwards is seen as an event and anything older is found by the walk (or,
/// for a folder that appeared while watching, by the consumer's rescan).
enum FolderWalk {
    /// What the walk did.
    struct Result: Sendable {
        /// The outcome for `start` itself.
        var start: AddWatchOutcome = .skipped
        /// Where the watch limit stopped the walk, and the `errno`.
        var limit: (path: String, errno: Int32)?
    }

    /// Adds watches (through `add`) to `start` and every folder below it that `rules` do not
    /// ignore, without following symbolic links. Stops at the first watch-limit error.
    static func run(start: String, root: String, rules: IgnoreRules,
                    add: (String) -> AddWatchOutcome) -> Result {
        var result = Result()
        var stack = [start]
        var isFirst = true
        while let folder = stack.popLast() {
            let outcome = add(folder)
            if isFirst {
                result.start = outcome
                isFirst = false
            }
            switch outcome {
            case .added: break
            case .skipped, .failed: continue
            case .limit(let code):
                result.limit = (folder, code)
                return result
            }
            guard let stream = opendir(folder) else { continue }
            while let entry = readdir(stream) {
                let type = entry.pointee.d_type
                guard type == UInt8(DT_DIR) || type == UInt8(DT_UNKNOWN) else { continue }
                let name = withUnsafePointer(to: entry.pointee.d_name) {
                    String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self))
                }
                if name == "." || name == ".." { continue }
                let child = WatchPaths.join(folder, name)
                if type == UInt8(DT_UNKNOWN) {
                    var info = stat()
                    guard lstat(child, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else { continue }
                }
                if WatchPaths.isIgnored(child, root: root, rules: rules, isDirectory: true) { continue }
                stack.append(child)
            }
            closedir(stream)
        }
        return result
    }
}
