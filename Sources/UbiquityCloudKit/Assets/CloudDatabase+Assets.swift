// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import UbiquityWire
import UbiquityCore

extension CloudDatabase {
    /// Uploads the files of the records' new assets (``Asset/init(fileURL:)``: a file and no
    /// receipt), so that saving them carries receipts: one `assets/upload` request per record,
    /// then each file through ``AssetTransfer``. A record whose upload fails is reported to
    /// `onFailure` and left out; `onProgress` hears how far each record's uploads are.
    func uploadingAssets(of records: [Record], onProgress: (@Sendable (Record.ID, Double) -> Void)? = nil,
                         onFailure: (Record, CloudKitError) -> Void) async -> [Record] {
        var ready: [Record] = []
        for record in records {
            do {
                let id = record.recordID
                ready.append(try await uploadingAssets(of: record, progress: onProgress.map { report in { @Sendable fraction in report(id, fraction) } }))
            } catch {
                onFailure(record, CloudKitError.wrap(error))
            }
        }
        return ready
    }

    /// Uploads the files of `record`'s new assets now (``Asset/init(fileURL:)``) and returns the
    /// record carrying the server's receipts, so that saving it later — alone or in a batch of
    /// ``modifyRecords(saving:deleting:savePolicy:atomically:)`` — sends no content. Lets a caller
    /// run several records' uploads at once and save them in one request. `progress` hears the
    /// fraction of the new asset bytes done, ending with 1.
    public func uploadAssets(of record: Record, progress: (@Sendable (Double) -> Void)? = nil) async throws -> Record {
        try await uploadingAssets(of: record, progress: progress)
    }

    /// `record` with each new asset uploaded and replaced by the server's value (with its
    /// receipt; ``Asset/fileURL`` kept). `progress` hears the fraction of the record's new
    /// asset bytes done (scanning a file for chunks the server has counts as half of it when
    /// the deduplicating upload is used), ending with 1.
    func uploadingAssets(of record: Record, progress: (@Sendable (Double) -> Void)? = nil) async throws -> Record {
        var pending: [(key: Record.FieldKey, index: Int?, fileURL: URL, scan: AssetFileScan?)] = []
        for (key, value) in record.values.sorted(by: { $0.key < $1.key }) {
            switch value {
            case .asset(let asset) where asset.needsUpload:
                if let fileURL = asset.fileURL { pending.append((key, nil, fileURL, asset.fileScan)) }
            case .list(let items):
                for (index, item) in items.enumerated() {
                    if case .asset(let asset) = item, asset.needsUpload, let fileURL = asset.fileURL {
                        pending.append((key, index, fileURL, asset.fileScan))
                    }
                }
            default:
                break
            }
        }
        guard !pending.isEmpty else { return record }
        guard pending.count <= WireLimits.assetTokensPerRequest else {
            throw CloudKitError(.limitExceeded, "limit exceeded: record \(record.recordID.recordName) has \(pending.count) new assets; at most \(WireLimits.assetTokensPerRequest) are uploaded per save")
        }
        let tokens: [JSONValue] = pending.map { item in
            .object(["recordType": .string(record.recordType), "fieldName": .string(item.key), "recordName": .string(record.recordID.recordName)])
        }
        let response = try await send("assets/upload", body: .object(["zoneID": record.recordID.zoneID.wire.json, "tokens": .array(tokens)]))
        let answered = try CloudContainer.unexpected("assets/upload") { try CloudContainer.reader(response, "assets/upload").requiredArray("tokens") }
        guard answered.count == pending.count else {
            throw CloudKitError(.internalError, "the server answered assets/upload with \(answered.count) upload URLs for \(pending.count) assets")
        }
        var updated = record
        let transfer = AssetTransfer()
        let files = pending.map(\.fileURL)
        let sizes = try await BlockingWork.run {
            files.map { file in ((try? FileManager.default.attributesOfItem(atPath: file.path)[.size]) as? NSNumber)?.int64Value ?? 0 }
        }
        let tracker = progress.map { RecordUploadProgress(sizes: sizes, report: $0) }
        for (index, (item, token)) in zip(pending, answered).enumerated() {
            guard let text = token.objectValue?["url"]?.stringValue, let url = URL(string: text) else {
                throw CloudKitError(.internalError, "the server answered assets/upload without an upload URL for field \(item.key)")
            }
            var uploaded = try await transfer.upload(fileURL: item.fileURL, to: url, scan: item.scan,
                                                     progress: tracker.map { tracker in { @Sendable report in tracker.update(file: index, report) } }).asset
            tracker?.finish(file: index)
            uploaded.fileURL = item.fileURL
            if let index = item.index, case .list(var items)? = updated.values[item.key], items.indices.contains(index) {
                items[index] = .asset(uploaded)
                updated.values[item.key] = .list(items)
            } else {
                updated.values[item.key] = .asset(uploaded)
            }
        }
        return updated
    }
}

/// Turns the progress reports of a record's asset uploads into one fraction for the record.
final class RecordUploadProgress: Sendable {
    private struct State {
        var done: [Double]
        var scanned: Set<Int> = []
        var reported = -1.0
    }

    private let sizes: [Int64]
    private let report: @Sendable (Double) -> Void
    private let state: Mutex<State>

    init(sizes: [Int64], report: @escaping @Sendable (Double) -> Void) {
        self.sizes = sizes
        self.report = report
        state = Mutex(State(done: Array(repeating: 0, count: sizes.count)))
    }

    /// A report from the transfer of file `file`.
    func update(file: Int, _ progress: AssetTransferProgress) {
        var fraction = progress.fractionCompleted
        let hadScanned = state.withLock { state -> Bool in
            if progress.phase == .scanning { state.scanned.insert(file) }
            return state.scanned.contains(file)
        }
        if hadScanned { fraction = progress.phase == .scanning ? fraction / 2 : 0.5 + fraction / 2 }
        set(file: file, fraction: fraction)
    }

    /// File `file` is uploaded.
    func finish(file: Int) { set(file: file, fraction: 1) }

    private func set(file: Int, fraction: Double) {
        let sizes = self.sizes
        // Reported under the lock: chunks are sent at once from several threads, and a value
        // computed first must not reach the caller after a later one.
        state.withLock { state in
            state.done[file] = max(state.done[file], min(1, fraction))
            // Empty files weigh as one byte, so a record of empty files still moves to 1.
            let weights = sizes.map { Double(max(1, $0)) }
            let overall = zip(state.done, weights).reduce(0.0) { $0 + $1.0 * $1.1 } / weights.reduce(0, +)
            // Reported only when it moved (by 0.1 % or to the end), never backwards.
            let ended = state.done.allSatisfy { $0 >= 1 }
            guard ended ? state.reported < 1 : overall - state.reported >= 0.001 else { return }
            state.reported = ended ? 1 : overall
            report(state.reported)
        }
    }
}

extension CloudDatabase {
    /// Downloads the assets of a fetched record into `directory`, a cache: one file per content,
    /// named by its checksum, so content already there (with its size) is not downloaded again.
    /// Returns the record with each asset's ``Asset/fileURL`` set (assets without a
    /// `downloadURL` are left as they are).
    /// - Throws: ``CloudKitError`` from the download (the record is not returned half-done).
    public func downloadingAssets(of record: Record, into directory: URL, transfer: AssetTransfer = AssetTransfer()) async throws -> Record {
        try await BlockingWork.run { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) }
        var updated = record
        for (key, value) in record.values.sorted(by: { $0.key < $1.key }) {
            switch value {
            case .asset(let asset):
                updated.values[key] = .asset(try await Self.cached(asset, in: directory, transfer: transfer))
            case .list(let items) where items.contains(where: { $0.assetValue != nil }):
                var cachedItems: [RecordValue] = []
                for item in items {
                    if case .asset(let asset) = item {
                        cachedItems.append(.asset(try await Self.cached(asset, in: directory, transfer: transfer)))
                    } else {
                        cachedItems.append(item)
                    }
                }
                updated.values[key] = .list(cachedItems)
            default:
                break
            }
        }
        return updated
    }

    /// The asset with its content in `directory` (downloaded unless already there).
    static func cached(_ asset: Asset, in directory: URL, transfer: AssetTransfer) async throws -> Asset {
        guard asset.downloadURL != nil, let checksum = asset.fileChecksum else { return asset }
        let name = checksum.replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "=", with: "")
        let file = directory.appendingPathComponent(name)
        var cached = asset
        let present = try await BlockingWork.run { () -> Int64? in
            (try? file.resourceValues(forKeys: [.fileSizeKey]).fileSize).flatMap { $0.map(Int64.init) }
        }
        if present == nil || (asset.size != nil && present != asset.size) {
            cached.fileURL = try await asset.download(to: file, transfer: transfer)
        } else {
            cached.fileURL = file
        }
        return cached
    }
}
