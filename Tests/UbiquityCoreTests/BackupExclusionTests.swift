// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore

@Suite("BackupExclusion (skip-backup attribute)")
struct BackupExclusionTests {
    /// A fresh temporary folder, removed by `cleanUp`.
    private func makeFolder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ubiq-backup-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test func theAttributeIsNamedAsOnMacOS() {
        #expect(BackupExclusion.attributeName == "user.com.apple.metadata:com_apple_backup_excludeItem")
    }

    @Test func theValueIsABinaryPlistOfTheBackupdString() throws {
        let data = Data(BackupExclusion.attributeValue)
        #expect(data.starts(with: Array("bplist00".utf8)))
        var format = PropertyListSerialization.PropertyListFormat.xml
        let value = try PropertyListSerialization.propertyList(from: data, options: [], format: &format)
        #expect(value as? String == "com.apple.backupd")
        #expect(format == .binary)
        // And it is exactly what Foundation writes for that string.
        let foundation = try PropertyListSerialization.data(fromPropertyList: "com.apple.backupd", format: .binary, options: 0)
        #expect(try PropertyListSerialization.propertyList(from: foundation, options: [], format: nil) as? String == "com.apple.backupd")
    }

    @Test func excludeAndIncludeRoundTrip() throws {
        let folder = try makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("cache.db").path
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        #expect(try !BackupExclusion.isExcluded(file))
        try BackupExclusion.setExcluded(true, file)
        #expect(try BackupExclusion.isExcluded(file))
        #expect(try ExtendedAttributes.value(BackupExclusion.attributeName, at: file) == BackupExclusion.attributeValue)
        try BackupExclusion.setExcluded(true, file)  // twice is fine
        try BackupExclusion.setExcluded(false, file)
        #expect(try !BackupExclusion.isExcluded(file))
        try BackupExclusion.setExcluded(false, file)  // clearing an absent attribute is fine
        // Folders can be excluded too.
        try BackupExclusion.setExcluded(true, folder.path)
        #expect(try BackupExclusion.isExcluded(folder.path))
    }

    @Test func anyValueCountsAsExcluded() throws {
        let folder = try makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("a").path
        #expect(FileManager.default.createFile(atPath: file, contents: nil))
        try ExtendedAttributes.setValue(Array("true".utf8), for: BackupExclusion.attributeName, at: file)
        #expect(try BackupExclusion.isExcluded(file))
    }

    @Test func missingItemsAreNotFound() throws {
        let folder = try makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let missing = folder.appendingPathComponent("missing").path
        #expect(throws: UbiquityError.self) { try BackupExclusion.setExcluded(true, missing) }
        do {
            try BackupExclusion.setExcluded(true, missing)
        } catch let error as UbiquityError {
            #expect(error.code == .notFound)
            #expect(error.message.contains(missing))
        }
    }

    @Test func aFileSystemWithoutUserAttributesGivesAClearError() throws {
        // procfs refuses user extended attributes with EOPNOTSUPP.
        do {
            try BackupExclusion.setExcluded(true, "/proc/self/status")
            Issue.record("setting the attribute on procfs should fail")
        } catch let error as UbiquityError {
            #expect(error.code == .unsupported)
            #expect(error.message.contains("does not support user extended attributes"))
            #expect((error.underlying as? POSIXError)?.code == .EOPNOTSUPP)
        }
    }
}
