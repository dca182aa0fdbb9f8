// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import Ubiquity

@Suite("URL skip-backup resource value")
struct URLResourceValuesTests {
    @Test func isExcludedFromBackupRoundTrips() throws {
        let sandbox = try VersionSandbox()
        var url = try sandbox.write("cache", to: "cache.bin")
        let before = try url.ubiquityResourceValues(forKeys: [.isExcludedFromBackupKey, .fileSizeKey])
        #expect(before.isExcludedFromBackup == false)
        #expect(before.fileSize == 5)

        var values = URLResourceValues()
        values.isExcludedFromBackup = true
        try url.setUbiquityResourceValues(values)
        #expect(try url.ubiquityResourceValues(forKeys: [.isExcludedFromBackupKey]).isExcludedFromBackup == true)
        #expect(try ExtendedAttributes.value(BackupExclusion.attributeName, at: url.path) == BackupExclusion.attributeValue)
        #expect(try url.ubiquityIsExcludedFromBackup)
        // Foundation's own method still does not see it on Linux: that is why these exist.
        #if os(Linux)
        #expect(try url.resourceValues(forKeys: [.isExcludedFromBackupKey]).isExcludedFromBackup == nil)
        #endif

        values.isExcludedFromBackup = false
        try url.setUbiquityResourceValues(values)
        #expect(try url.ubiquityResourceValues(forKeys: [.isExcludedFromBackupKey]).isExcludedFromBackup == false)
        #expect(try ExtendedAttributes.value(BackupExclusion.attributeName, at: url.path) == nil)
    }

    @Test func keysNotAskedForAreNotFilled() throws {
        let sandbox = try VersionSandbox()
        let url = try sandbox.write("x", to: "a.txt")
        try url.setUbiquityExcludedFromBackup(true)
        let values = try url.ubiquityResourceValues(forKeys: [.fileSizeKey])
        #expect(values.isExcludedFromBackup == nil)
        #expect(values.fileSize == 1)
    }

    @Test func foundationKeysAreAppliedAlongside() throws {
        let sandbox = try VersionSandbox()
        var url = try sandbox.write("x", to: "a.txt")
        let date = Date(timeIntervalSince1970: 1_600_000_000)
        var values = URLResourceValues()
        values.contentModificationDate = date
        values.isExcludedFromBackup = true
        try url.setUbiquityResourceValues(values)
        let read = try url.ubiquityResourceValues(forKeys: [.contentModificationDateKey, .isExcludedFromBackupKey])
        #expect(read.contentModificationDate == date)
        #expect(read.isExcludedFromBackup == true)
    }

    @Test func shorthandsSetAndClear() throws {
        let sandbox = try VersionSandbox()
        let url = try sandbox.write("x", to: "a.txt")
        #expect(try !url.ubiquityIsExcludedFromBackup)
        try url.setUbiquityExcludedFromBackup(true)
        #expect(try url.ubiquityIsExcludedFromBackup)
        try url.setUbiquityExcludedFromBackup(false)
        try url.setUbiquityExcludedFromBackup(false)  // clearing twice is fine
        #expect(try !url.ubiquityIsExcludedFromBackup)
    }

    @Test func aFileSystemWithoutUserAttributesIsUnsupported() throws {
        // procfs refuses user extended attributes (EOPNOTSUPP).
        var url = URL(fileURLWithPath: "/proc/self/status")
        var values = URLResourceValues()
        values.isExcludedFromBackup = true
        let error = VersionSandbox.expectError(.unsupported) { try url.setUbiquityResourceValues(values) }
        #expect(error?.message.contains("does not support user extended attributes") == true)
        VersionSandbox.expectError(.unsupported) { try url.ubiquityResourceValues(forKeys: [.isExcludedFromBackupKey]) }
        VersionSandbox.expectError(.unsupported) { try url.setUbiquityExcludedFromBackup(true) }
    }

    @Test func missingItemsAndRelativePathsAreRefused() throws {
        let sandbox = try VersionSandbox()
        var missing = sandbox.folder.appendingPathComponent("missing")
        var values = URLResourceValues()
        values.isExcludedFromBackup = true
        VersionSandbox.expectError(.notFound) { try missing.setUbiquityResourceValues(values) }
        VersionSandbox.expectError(.notFound) { try missing.ubiquityResourceValues(forKeys: [.isExcludedFromBackupKey]) }
        var relative = try #require(URL(string: "notes/a.txt"))
        VersionSandbox.expectError(.invalidArgument) { try relative.setUbiquityResourceValues(values) }
        VersionSandbox.expectError(.invalidArgument) { try relative.ubiquityIsExcludedFromBackup }
        var web = try #require(URL(string: "https://example.com/a.txt"))
        VersionSandbox.expectError(.invalidArgument) { try web.setUbiquityResourceValues(values) }
    }
}
