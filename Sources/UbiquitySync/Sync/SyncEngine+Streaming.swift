// SPDX-License-Identifier: Apache-2.0
import Glibc
import UbiquityCore

extension SyncEngine {
    /// Starts bringing back the evicted file at the absolute `path` (as
    /// ``startDownloading(_:progress:)`` does) and returns its bytes' arrival at once: a
    /// reader can read the first bytes while the rest follows. A download already followed is
    /// shared. The arrival finishes without a file when nothing was downloaded in order (the
    /// file was not evicted any more, or it came from a previous version's chunks): the file
    /// is then simply there, or gone. It fails with ENOENT when the server no longer has the
    /// item, EIO for any other failure.
    package nonisolated func streamEvicted(_ path: String) throws -> ByteArrival {
        let relative = try relativePath(path)
        let (arrival, isNew) = arrivals.begin(relative)
        guard isNew else { return arrival }
        Task { [self] in
            var failure: Int32?
            do { _ = try await startDownloading(path) } catch {
                failure = (error as? UbiquityError)?.code == .notFound ? ENOENT : EIO
            }
            arrivals.end(relative, failure: failure)
        }
        return arrival
    }
}
