// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityIndex

extension AccountSync {
    /// Answers the control socket's sync requests with the running folder sync:
    /// - `evict` PATH: evicts the file (a folder: its files); `done` lists what was evicted.
    /// - `download` PATH: downloads the evicted files PATH names; `progress` lines (path,
    ///   percent) come before `done` (with `wait: false`, `done` comes at once and the download
    ///   goes on).
    /// - `pin` PATH / `unpin` PATH: keeps the item (a folder: everything in it) downloaded, or
    ///   no longer; `pin`'s `done` lists what it downloaded.
    /// - `item` PATH: the item's sync state (`item`).
    /// - `confirm-deletes`: sends the deletes the mass-delete guard paused (``confirmDeletes()``);
    ///   `done` says what happened in `message`.
    ///
    /// A path in an app container (directly, or through its link in the folder) goes to that
    /// container's engine.
    /// - Throws: `serviceUnavailable` when no folder is synced; the engine's errors.
    package func handle(_ request: ControlWire.Request, send: @escaping @Sendable (ControlWire.Reply) -> Void) async throws -> ControlWire.Reply {
        if request.op == .confirmDeletes {
            var reply = ControlWire.Reply(event: .done)
            reply.message = try await confirmDeletes()
            return reply
        }
        guard let drive = engine else { throw UbiquityError(.serviceUnavailable, "\(request.op): no folder is synced (not signed in?)") }
        guard let path = request.path else { throw UbiquityError(.invalidArgument, "\(request.op): missing 'path'") }
        let engine = await appEngine(holding: path) ?? drive
        var reply = ControlWire.Reply(event: .done)
        switch request.op {
        case .evict:
            reply.paths = try await engine.evict(path) { done, total in
                var line = ControlWire.Reply(event: .progress)
                line.path = path
                line.bytes = done
                line.total = total
                line.percent = total > 0 ? Double(done) * 100 / Double(total) : 100
                send(line)
            }
        case .download:
            let targets = try await engine.downloadTargets(path)
            guard request.wait ?? true else {
                let logger = self.logger
                Task {
                    do { _ = try await engine.startDownloading(path) } catch {
                        logger.warning("download on demand failed", metadata: ["ubiquity.path": "\(path)", "ubiquity.error": "\(error)"])
                    }
                }
                reply.paths = targets
                return reply
            }
            reply.paths = try await engine.startDownloading(path) { file, percent in
                var line = ControlWire.Reply(event: .progress)
                line.path = file
                line.percent = percent
                send(line)
            }
        case .pin:
            reply.paths = try await engine.pin(path)
        case .unpin:
            try await engine.unpin(path)
            reply.paths = [path]
        case .item:
            reply = ControlWire.Reply(event: .item)
            reply.item = try await BlockingWork.run { try engine.itemState(path) }
        default:
            throw UbiquityError(.invalidArgument, "'\(request.op)' is not a request for the folder sync")
        }
        return reply
    }

    /// The app container's engine whose folder holds `path` (links resolved), if any.
    func appEngine(holding path: String) async -> SyncEngine? {
        guard let canonical = try? CanonicalPath.canonicalize(path) else { return nil }
        return await appEngines.values.first { canonical == $0.folder || canonical.hasPrefix($0.folder + "/") }
    }
}
