// SPDX-License-Identifier: Apache-2.0
import Foundation
import Ubiquity
import UbiquityCore
import UbiquityIndex

/// Download on open for the commands that read a file of the folder (`cat`, `get`, `put`'s
/// source): an evicted file (a placeholder: sparse, marked `user.org.ubiquity.evicted`) is
/// downloaded through the daemon's control socket first, as `ubiq download` does, so its zeros
/// are never printed or copied. A plain `open()` by other programs still reads the placeholder
/// (there is no FUSE layer to intercept it: docs/sync.md).
enum PlaceholderDownload {
    /// Whether the file at `path` is a placeholder still without its content (a write into one
    /// makes it an edit, read as it is).
    static func isPlaceholder(_ path: String) -> Bool {
        Placeholder.read(path) != nil && Placeholder.isHollow(path)
    }

    /// Downloads the file at `path` first when it is a placeholder; `argument` names it in
    /// errors (`PATH`, `SRC`). Throws a clear error when the daemon is not running, the server
    /// cannot be reached, or the file is still a placeholder afterwards — never reads the zeros.
    /// Must run before a coordinated read of the file is taken (the download is a coordinated
    /// write by the daemon).
    static func ensureContent(_ path: String, argument: String, socketPath: String = ControlWire.socketPath()) throws {
        guard isPlaceholder(path) else { return }
        do {
            _ = try UbiquitousItemControl.download(at: URL(fileURLWithPath: path), wait: true, socketPath: socketPath)
        } catch let error as UbiquityError {
            throw UbiquityError(error.code, "\(argument) '\(path)' is evicted (a placeholder) and could not be downloaded: \(error.message)",
                                underlying: error)
        }
        if isPlaceholder(path) {
            throw UbiquityError(.io, "\(argument) '\(path)' is still a placeholder after the download; try 'ubiq download \(path)'")
        }
    }
}
