// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

extension CloudDatabase {
    /// Uploads the files of the records' new assets (``Asset/init(fileURL:)``: a file and no
    /// receipt), so that saving them carries receipts: one `assets/upload` request per record,
    /// then each file through ``AssetTransfer``. A record whose upload fails is reported to
    /// `onFailure` and left out.
    func uploadingAssets(of records: [Record], onFailure: (Record, CloudKitError) -> Void) async -> [Record] {
        var ready: [Record] = []
        for record in records {
            do {
                ready.append(try await uploadingAssets(of: record))
            } catch {
                onFailure(record, CloudKitError.wrap(error))
            }
        }
        return ready
    }

    /// `record` with each new asset uploaded and replaced by the server's value (with its
    /// receipt; ``Asset/fileURL`` kept).
    func uploadingAssets(of record: Record) async throws -> Record {
        var pending: [(key: Record.FieldKey, index: Int?, fileURL: URL)] = []
        for (key, value) in record.values.sorted(by: { $0.key < $1.key }) {
            switch value {
            case .asset(let asset) where asset.needsUpload:
                if let fileURL = asset.fileURL { pending.append((key, nil, fileURL)) }
            case .list(let items):
                for (index, item) in items.enumerated() {
                    if case .asset(let asset) = item, asset.needsUpload, let fileURL = asset.fileURL { pending.append((key, index, fileURL)) }
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
        for (item, token) in zip(pending, answered) {
            guard let text = token.objectValue?["url"]?.stringValue, let url = URL(string: text) else {
                throw CloudKitError(.internalError, "the server answered assets/upload without an upload URL for field \(item.key)")
            }
            var uploaded = try await transfer.upload(fileURL: item.fileURL, to: url).asset
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
