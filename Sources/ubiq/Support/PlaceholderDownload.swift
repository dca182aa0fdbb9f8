// SPDX-License-Identifier: Apache-2.0
import Foundation
import Ubiquity
import UbiquityCore
import UbiquityIndex

/// Download on open for the commands that read a file of the folder (`cat`, `get`, `put`'s
/// source): an evicted file (nothing at its name, its hidden stub `.NAME.icloud` beside it) is
/// downloaded through the daemon's control socket first, as `ubiq download` does. Other
/// programs find no file at the name until it is downloaded (docs/sync.md).
enum PlaceholderDownload {
    /// Whether the file at `path` is evicted: only its stub is there.
    static func isPlaceholder(_ path: String) -> Bool {
        Placeholder.isEvicted(path)
    }

    /// Downloads the file at `path` first when it is a placeholder; `argument` names it in
    /// errors (`PATH`, `SRC`). Throws a clear error when the daemon is not running, the server
    /// cannot be reached, or the file is still evicted afterwards.
    /// Must run before a coordinated read of the file is taken (the download is a coordinated
    /// write by the daemon).
    static func ensureContent(_ path: String, argument: String, socketPath: String = ControlWire.socketPath(),
                              display: ProgressDisplay? = nil) throws {
        guard isPlaceholder(path) else { return }
        do {
            try download(path, socketPath: socketPath, display: display)
        } catch let error as UbiquityError {
            throw UbiquityError(error.code, "\(argument) '\(path)' is evicted (only its stub is here) and could not be downloaded: \(error.message)",
                                underlying: error)
        }
        if isPlaceholder(path) {
            throw UbiquityError(.io, "\(argument) '\(path)' is still evicted after the download; try 'ubiq download \(path)'")
        }
    }

    /// Downloads what `path` names (waiting), showing each file's bytes, rate and time left on
    /// `display` (the sizes are the stubs'); returns the paths downloaded.
    @discardableResult
    static func download(_ path: String, socketPath: String = ControlWire.socketPath(), display: ProgressDisplay?) throws -> [String] {
        var sizes: [String: Int64] = [:]
        defer { display?.finish() }
        return try UbiquitousItemControl.download(at: URL(fileURLWithPath: path), wait: true, socketPath: socketPath) { file, percent in
            guard let display, display.enabled else { return }
            if sizes[file] == nil { sizes[file] = Placeholder.standingFor(file)?.size ?? 0 }
            let total = sizes[file] ?? 0
            display.update((file as NSString).lastPathComponent, done: Int64(Double(total) * percent / 100), total: total)
        }
    }
}
