// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Logging
import Synchronization
import UbiquityCore
import UbiquityWire

/// Committing a chunk list with the uploader's claimed checksum, and checking the claim in the
/// background.
///
/// Reading a large asset back from its chunks to compute its checksum is most of what a
/// manifest commit costs (1 GiB from ~16,000 chunk files for a one-byte edit), although every
/// chunk was checked against its hash when it was stored. So a commit that names the checksum
/// the uploader computed is answered at once: the manifest is written marked `unverified`
/// (with an empty marker in `verifying/`, so that a restart resumes the check), and a
/// background task reads the chunks through. The checksum is the asset's identity and what
/// deduplication matches on, so it is never trusted blindly:
///
/// - an unverified asset is not a deduplication target (`chunks/missing` with a checksum treats
///   it as absent, so another uploader sends its own chunks);
/// - a verified manifest (a plain upload, a commit read through) replaces an unverified one of
///   the same checksum; another list claiming the same checksum is read through at once;
/// - a mismatch deletes the manifest and is logged as an error (``verificationFailures``).
///
/// The uploader's own records may refer to it and download it meanwhile (a download checks each
/// chunk's hash; only its whole checksum is unconfirmed).
///
/// A **chunk-list checksum** (``AssetChecksum/Kind/chunkList``) is checked at once instead: it is
/// computed from the list itself (each chunk was checked against its hash when stored), so a
/// claim that does not match is refused (`invalidArgument`) and never stored, and one that
/// matches is committed verified — a deduplication target at once.
extension FileBlobStore {
    /// Commits `chunks` as the asset `claimedChecksum` names without reading them (see the
    /// extension's description); with no claim, or when another list already claims that
    /// checksum, reads them through as ``commitManifest(_:)`` does.
    package func commitManifest(_ chunks: [AssetChunkRef], claimedChecksum: String?) async throws -> BlobInfo {
        try await commitManifest(chunks, claimedChecksum: claimedChecksum, base: nil)
    }

    /// As ``commitManifest(_:claimedChecksum:)``; `base` is the stored asset the list was sent
    /// relative to, whose chunks need not be retained (`FileBlobStore+Retention.swift`).
    /// - Throws: `invalidArgument` for a claimed chunk-list checksum the list does not have;
    ///   `notFound` (underlying ``BlobMissingChunks``) naming chunks not stored.
    package func commitManifest(_ chunks: [AssetChunkRef], claimedChecksum: String?, base: String?) async throws -> BlobInfo {
        guard let claimed = claimedChecksum else { return try await commitManifest(chunks) }
        guard let path = manifestPath(claimed), let key = FileBlobStore.manifestKey(claimed) else {
            throw UbiquityError(.invalidArgument, "fileChecksum: expected the standard base64 of a SHA-256 or a chunk-list checksum, not `\(claimed)`")
        }
        try Self.checkChunkRefs(chunks)
        let listChecksum = AssetChecksum.kind(of: claimed) == .chunkList
        if listChecksum {
            let actual = AssetChecksum.chunkList(chunks)
            guard actual == claimed else {
                throw UbiquityError(.invalidArgument, "fileChecksum: the chunk list's checksum is \(actual), not the claimed \(claimed)")
            }
        }
        let total = chunks.reduce(Int64(0)) { $0 + Int64($1.size) }
        let committed: BlobInfo? = try await BlockingWork.run {
            let skipping = base != nil && self.beginSkippingCommit()
            defer { if skipping { self.endSkippingCommit() } }
            try self.retain(chunks, skippingBase: skipping ? base : nil)
            return try self.manifestLock.withLock { _ -> BlobInfo? in
                if listChecksum {
                    // the checksum names exactly this list: a stored one is the same
                    if let existing = try self.readHeader(path) {
                        _ = try BlobFiles.touch(path)
                        return existing
                    }
                    let manifest = BlobManifest(fileChecksum: claimed, size: total, chunks: chunks, verified: true)
                    try self.commitLocked(manifest)
                    return manifest.info
                }
                if let existing = try self.loadManifest(claimed) {
                    // the same list: the same content, whatever it is; a verified asset of that
                    // checksum and size is that content (a false claim only refers to it)
                    guard existing.chunks == chunks || (existing.verified && existing.size == total) else { return nil }
                    _ = try BlobFiles.touch(path)
                    return existing.info
                }
                try BlobFiles.writeAtomically(self.verifyingRoot + "/" + key, bytes: UnsafeRawBufferPointer(start: nil, count: 0),
                                              temporaryDirectory: self.temporaryRoot)
                let manifest = BlobManifest(fileChecksum: claimed, size: total, chunks: chunks, verified: false)
                try self.commitLocked(manifest)
                return manifest.info
            }
        }
        guard let committed else { return try await commitManifest(chunks) }
        if !committed.verified { scheduleVerification(key) }
        return committed
    }

    /// How many unverified manifests were found not to match their claimed checksum (each
    /// deleted and logged).
    package var verificationFailures: Int { verificationFailureCounter.load(ordering: .relaxed) }
    /// Chunk bytes read back to compute a checksum while a commit waited.
    package var commitReadBytes: Int64 { commitReadCounter.load(ordering: .relaxed) }
    /// Chunk bytes read back by background verification.
    package var verificationReadBytes: Int64 { verificationReadCounter.load(ordering: .relaxed) }

    /// Waits until every background verification started so far has ended (tests, shutdown).
    package func waitForVerifications() async {
        while let next = verifications.withLock({ $0.values.first }) { await next.value }
    }

    /// Starts verifying the manifests a previous process left unverified (their markers).
    func resumeVerifications() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: verifyingRoot) else { return }
        for name in names where FileBlobStore.fileChecksum(manifestKey: name) != nil { scheduleVerification(name) }
    }

    /// Verifies manifest `key` in the background unless that is already under way.
    func scheduleVerification(_ key: String) {
        verifications.withLock { tasks in
            guard tasks[key] == nil else { return }
            tasks[key] = Task.detached(priority: .background) { [self] in
                await verify(key)
                _ = verifications.withLock { $0.removeValue(forKey: key) }
            }
        }
    }

    /// Reads manifest `key`'s chunks through; marks it verified when they hash to its checksum,
    /// deletes it (and logs an error) when they do not. The marker goes once that is settled.
    private func verify(_ key: String) async {
        let marker = verifyingRoot + "/" + key
        guard let checksum = FileBlobStore.fileChecksum(manifestKey: key), let path = manifestPath(checksum) else {
            unlink(marker)
            return
        }
        do {
            try await BlockingWork.run {
                guard let manifest = try self.loadManifest(checksum), !manifest.verified else {
                    unlink(marker)
                    return
                }
                var failure: String?
                do {
                    let (actual, _) = try self.readThroughChecksum(manifest.chunks, background: true)
                    if actual != checksum { failure = "its chunks hash to \(actual)" }
                } catch let error as UbiquityError where error.code == .notFound || error.code == .io {
                    failure = error.message
                }
                try self.manifestLock.withLock { _ in
                    // settled meanwhile (replaced by a verified manifest, collected): nothing to do
                    guard let now = try self.loadManifest(checksum), !now.verified, now.chunks == manifest.chunks else { return }
                    if let failure {
                        unlink(path)
                        self.verificationFailureCounter.add(1, ordering: .relaxed)
                        self.logger.error("an uploaded asset does not match the checksum its uploader claimed; it was deleted", metadata: [
                            "blob.checksum": "\(checksum)", "blob.size": "\(manifest.size)", "blob.problem": "\(failure)",
                        ])
                    } else {
                        var verified = now
                        verified.verified = true
                        try self.writeManifest(verified, at: path)
                        self.logger.debug("blob verified", metadata: ["blob.checksum": "\(checksum)", "blob.size": "\(manifest.size)"])
                    }
                }
                unlink(marker)
            }
        } catch {
            logger.error("cannot verify an uploaded asset; retried at the next start", metadata: [
                "blob.checksum": "\(checksum)", "error": "\(error)",
            ])
        }
    }
}
