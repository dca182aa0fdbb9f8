// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// The copy that a `.forUploading` read hands to its accessor, made while the claim is held and
/// removed when the accessor returns. Apple zips folders; Ubiquity copies the folder as a folder.
struct Snapshot {
    let url: URL
    private let directory: URL

    static func make(of path: String) throws -> Snapshot {
        guard FileStamp.of(path) != nil else { throw UbiquityError(.notFound, "no item at '\(path)' to snapshot") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ubiquity-snapshot-" + UUID().uuidString)
        try UbiquityPaths.ensureDirectory(directory)
        let url = directory.appendingPathComponent(CanonicalPath.lastComponent(of: path))
        do {
            try FileManager.default.copyItem(at: URL(fileURLWithPath: path), to: url)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw UbiquityError(.io, "cannot snapshot '\(path)' for uploading", underlying: error)
        }
        return Snapshot(url: url, directory: directory)
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}
