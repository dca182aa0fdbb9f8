// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityIndex

/// Eviction and on-demand download of synced items, as Apple's `FileManager` has them, through
/// the daemon's control socket (`ubiq daemon` syncs the folder; `docs/sync.md`, "Eviction").
///
/// Porting notes: Apple's `evictUbiquitousItem(at:)` and `startDownloadingUbiquitousItem(at:)`
/// keep their names; async forms are added. As on Apple's platforms, do not wrap them in a
/// coordinated write: the daemon coordinates (presenters are asked to relinquish first).
extension FileManager {
    /// Removes the local copy of the synced item at `url` (a folder: of every file in it that
    /// can be): a placeholder of the same name and size stays, and the server keeps the item.
    /// `startDownloadingUbiquitousItem(at:)` brings it back.
    /// - Throws: `serviceUnavailable` when no daemon syncs; `invalidArgument` when the item is
    ///   not in the sync folder or is excluded from sync; `conflict` when it is not uploaded yet
    ///   or has unsaved conflict versions; `notFound`.
    public func evictUbiquitousItem(at url: URL) throws {
        _ = try UbiquitousItemControl.evict(at: url)
    }

    /// The async form of ``evictUbiquitousItem(at:)``.
    public func evictUbiquitousItem(at url: URL) async throws {
        try await BlockingWork.run { _ = try UbiquitousItemControl.evict(at: url) }
    }

    /// Starts downloading the evicted item at `url` (a folder: every evicted file in it) and
    /// returns; an item that is here already succeeds at once. Watch
    /// ``UbiquitousItemResourceValues/ubiquitousItemDownloadingStatus`` (or a metadata query)
    /// to see it arrive.
    /// - Throws: `serviceUnavailable` when no daemon syncs; `invalidArgument` when the item is
    ///   not in the sync folder; `notFound`.
    public func startDownloadingUbiquitousItem(at url: URL) throws {
        _ = try UbiquitousItemControl.download(at: url, wait: false)
    }

    /// The async form of ``startDownloadingUbiquitousItem(at:)``: returns once the download
    /// started (not when it ended).
    public func startDownloadingUbiquitousItem(at url: URL) async throws {
        try await BlockingWork.run { _ = try UbiquitousItemControl.download(at: url, wait: false) }
    }
}

/// The requests behind eviction and download, with what the daemon answers (for the CLI).
package enum UbiquitousItemControl {
    /// Evicts the item at `url`; returns the paths evicted. `progress` hears a folder's bytes
    /// looked at so far, of all.
    package static func evict(at url: URL, socketPath: String = ControlWire.socketPath(),
                             progress: ((_ done: Int64, _ total: Int64) -> Void)? = nil) throws -> [String] {
        try request(ControlWire.Request(op: .evict, path: try absolutePath(url)), socketPath: socketPath) { line in
            if line.event == .progress, let done = line.bytes, let total = line.total { progress?(done, total) }
        }.paths ?? []
    }

    /// Downloads the evicted item(s) at `url`; with `wait`, returns when they are here
    /// (`progress` hears each file's percent done), else once the download started. Returns the
    /// paths downloaded (or being downloaded).
    package static func download(at url: URL, wait: Bool, socketPath: String = ControlWire.socketPath(),
                                progress: ((_ path: String, _ percent: Double) -> Void)? = nil) throws -> [String] {
        try request(ControlWire.Request(op: .download, path: try absolutePath(url), wait: wait), socketPath: socketPath) { line in
            if line.event == .progress, let path = line.path, let percent = line.percent { progress?(path, percent) }
        }.paths ?? []
    }

    /// Pins the item at `url` (Apple's "Keep Downloaded"; a folder: everything in it): it is
    /// downloaded and never evicted. Returns the paths downloaded.
    package static func pin(at url: URL, socketPath: String = ControlWire.socketPath()) throws -> [String] {
        try request(ControlWire.Request(op: .pin, path: try absolutePath(url)), socketPath: socketPath).paths ?? []
    }

    /// Unpins the item at `url`: it may be evicted again.
    package static func unpin(at url: URL, socketPath: String = ControlWire.socketPath()) throws {
        _ = try request(ControlWire.Request(op: .unpin, path: try absolutePath(url)), socketPath: socketPath)
    }

    /// The daemon's sync state of the item at `url`.
    package static func state(at url: URL, socketPath: String = ControlWire.socketPath()) throws -> ItemSyncState {
        guard let item = try request(ControlWire.Request(op: .item, path: try absolutePath(url)), socketPath: socketPath).item else {
            throw UbiquityError(.protocolError, "the daemon sent no item state")
        }
        return item
    }

    static func absolutePath(_ url: URL) throws -> String {
        guard url.isFileURL || url.scheme == nil else { throw UbiquityError(.invalidArgument, "'\(url.absoluteString)' is not a file URL") }
        guard url.path.hasPrefix("/") else { throw UbiquityError(.invalidArgument, "path '\(url.path)' is relative; an absolute path is required") }
        return url.standardizedFileURL.path
    }

    /// Sends `request`, gives every line before the last to `line`, returns the last.
    static func request(_ request: ControlWire.Request, socketPath: String,
                        line: (ControlWire.Reply) -> Void = { _ in }) throws -> ControlWire.Reply {
        let socket: UnixSocket
        do { socket = try UnixSocket.connect(to: socketPath) } catch {
            throw UbiquityError(.serviceUnavailable, "no daemon answers on '\(socketPath)': is the Ubiquity daemon running?", underlying: error)
        }
        defer { socket.shutdown() }
        try socket.send(ControlWire.encode(request))
        while true {
            guard let bytes = socket.readLine() else {
                throw UbiquityError(.serviceUnavailable, "the daemon closed the connection without answering")
            }
            let reply = try ControlWire.decode(ControlWire.Reply.self, from: bytes)
            if reply.event == .error { throw reply.error }
            if reply.event == .progress {
                line(reply)
                continue
            }
            return reply
        }
    }
}
