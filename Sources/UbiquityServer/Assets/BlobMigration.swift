// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import NIOCore
import UbiquityCore
import UbiquityWire

/// Copies every asset of one ``BlobStore`` into another (`ubiq admin blobs migrate`), and checks
/// a store's content (`ubiq admin blobs verify`).
///
/// A copy is verified by checksum: a whole-content asset is streamed into the target's writer,
/// which computes the checksum from the bytes it stored, and must find the source's; a
/// chunk-list asset is copied chunk by chunk (each checked against its hash by the target) and
/// committed with its chunk-list checksum, which the target checks against the list. Assets the
/// target holds already are skipped, so an interrupted migration continues where it stopped
/// when run again. The source is only read.
package struct BlobMigration: Sendable {
    /// Where it is: assets and bytes done of the total.
    package struct Progress: Sendable, Hashable {
        /// Assets looked at so far.
        package var assets = 0
        /// Of how many.
        package var totalAssets = 0
        /// Bytes of the assets looked at (copied or found in the target).
        package var bytes: Int64 = 0
        /// Of how many.
        package var totalBytes: Int64 = 0

        /// A position.
        package init(assets: Int = 0, totalAssets: Int = 0, bytes: Int64 = 0, totalBytes: Int64 = 0) {
            self.assets = assets
            self.totalAssets = totalAssets
            self.bytes = bytes
            self.totalBytes = totalBytes
        }
    }

    /// What a migration did.
    package struct Report: Sendable, Hashable {
        /// Assets copied.
        package var copied = 0
        /// Assets the target held already.
        package var skipped = 0
        /// Bytes copied.
        package var bytesCopied: Int64 = 0
        /// Assets that could not be copied (missing or damaged in the source), by checksum, with why.
        package var failed: [String: String] = [:]
    }

    /// What a verification found.
    package struct Verification: Sendable, Hashable {
        /// Assets read whole and found to match their checksum.
        package var good = 0
        /// Bytes read.
        package var bytes: Int64 = 0
        /// Assets whose content is missing (a chunk or pack is gone), by checksum, with why.
        package var missing: [String: String] = [:]
        /// Assets whose content does not match (a damaged chunk, a wrong checksum), by checksum, with why.
        package var corrupt: [String: String] = [:]
    }

    /// Where assets are read.
    package let source: any BlobStore
    /// Where they are written.
    package let target: any BlobStore

    /// A migration from `source` to `target`.
    package init(source: any BlobStore, target: any BlobStore) {
        self.source = source
        self.target = target
    }

    /// Copies what the target lacks; `progress` is told after each asset (and while a large one
    /// streams).
    package func run(progress: @Sendable (Progress) -> Void = { _ in }) async throws -> Report {
        let checksums = try await source.assetChecksums().sorted()
        var sizes: [String: Int64] = [:]
        var state = Progress(totalAssets: checksums.count)
        for checksum in checksums {
            if let info = try await source.info(fileChecksum: checksum) { sizes[checksum] = info.size }
        }
        state.totalBytes = sizes.values.reduce(0, +)
        progress(state)
        var report = Report()
        for checksum in checksums {
            guard let size = sizes[checksum] else { continue }  // deleted meanwhile
            if try await target.info(fileChecksum: checksum) != nil {
                report.skipped += 1
            } else {
                do {
                    let base = state
                    try await copy(checksum) { done in
                        var now = base
                        now.bytes += done
                        progress(now)
                    }
                    report.copied += 1
                    report.bytesCopied += size
                } catch let error as UbiquityError where error.code == .notFound || error.code == .io || error.code == .invalidArgument {
                    report.failed[checksum] = error.message
                }
            }
            state.assets += 1
            state.bytes += size
            progress(state)
        }
        return report
    }

    /// Copies one asset, verified by its checksum.
    private func copy(_ checksum: String, progress: (Int64) -> Void) async throws {
        if AssetChecksum.kind(of: checksum) == .chunkList {
            guard let chunks = try await source.chunkList(fileChecksum: checksum) else {
                throw UbiquityError(.notFound, "the source has no chunk list for \(checksum)")
            }
            let missing = Set(try await target.missingChunks(chunks.map(\.hash)))
            var offset: Int64 = 0
            for chunk in chunks {
                let range = offset..<offset + Int64(chunk.size)
                offset = range.upperBound
                guard missing.contains(chunk.hash) else { continue }
                let bytes = try await source.readAll(fileChecksum: checksum, range: range)
                try await target.putChunk(hash: chunk.hash, bytes: ByteBuffer(bytes: bytes))
                progress(offset)
            }
            let info = try await target.commitManifest(chunks, claimedChecksum: checksum)
            guard info.fileChecksum == checksum else {
                throw UbiquityError(.io, "the copy of \(checksum) came out as \(info.fileChecksum)")
            }
            return
        }
        let writer = try await target.makeWriter()
        do {
            var done: Int64 = 0
            for try await buffer in try await source.read(fileChecksum: checksum, range: nil) {
                try await writer.append(buffer)
                done += Int64(buffer.readableBytes)
                progress(done)
            }
            let info = try await writer.finish()
            guard info.fileChecksum == checksum else {
                throw UbiquityError(.io, "the content of \(checksum) hashes to \(info.fileChecksum): the source is damaged")
            }
        } catch {
            await writer.abort()
            throw error
        }
    }

    /// Reads every asset of `store` whole, checking each chunk's hash and the asset's checksum;
    /// `progress` is told after each asset.
    package static func verify(_ store: any BlobStore, progress: @Sendable (Progress) -> Void = { _ in }) async throws -> Verification {
        let checksums = try await store.assetChecksums().sorted()
        var state = Progress(totalAssets: checksums.count)
        var result = Verification()
        for checksum in checksums {
            state.assets += 1
            defer { progress(state) }
            guard let info = try await store.info(fileChecksum: checksum) else { continue }  // deleted meanwhile
            do {
                let whole = BlockingSHA256()
                var size: Int64 = 0
                for try await buffer in try await store.read(fileChecksum: checksum, range: nil) {
                    try await whole.update(buffer)
                    size += Int64(buffer.readableBytes)
                }
                state.bytes += size
                result.bytes += size
                let matches: Bool
                if AssetChecksum.kind(of: checksum) == .chunkList {
                    matches = try await store.chunkList(fileChecksum: checksum).map { AssetChecksum.chunkList($0) == checksum } ?? false
                } else {
                    matches = Data(whole.finalize()).base64EncodedString() == checksum
                }
                if matches && size == info.size {
                    result.good += 1
                } else {
                    result.corrupt[checksum] = "its content does not hash to its checksum"
                }
            } catch let error as UbiquityError where error.code == .notFound {
                result.missing[checksum] = error.message
            } catch let error as UbiquityError where error.code == .io {
                result.corrupt[checksum] = error.message
            }
        }
        return result
    }
}
