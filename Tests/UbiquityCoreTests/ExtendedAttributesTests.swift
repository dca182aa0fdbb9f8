// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore

@Suite("ExtendedAttributes")
struct ExtendedAttributesTests {
    /// A fresh temporary file; the caller removes its folder.
    private func makeFile(_ text: String = "x") throws -> (folder: URL, path: String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ubiq-xattr-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent("file").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return (folder, path)
    }

    @Test func setReadListAndRemove() throws {
        let (folder, path) = try makeFile()
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(try ExtendedAttributes.value("user.test.a", at: path) == nil)
        let binary: [UInt8] = [0, 1, 2, 0, 255]
        try ExtendedAttributes.setValue(binary, for: "user.test.a", at: path)
        try ExtendedAttributes.setValue([], for: "user.test.empty", at: path)
        #expect(try ExtendedAttributes.value("user.test.a", at: path) == binary)
        #expect(try ExtendedAttributes.value("user.test.empty", at: path) == [])
        #expect(Set(try ExtendedAttributes.names(at: path)).isSuperset(of: ["user.test.a", "user.test.empty"]))
        try ExtendedAttributes.setValue(Array("new".utf8), for: "user.test.a", at: path)  // replaces
        #expect(try ExtendedAttributes.value("user.test.a", at: path) == Array("new".utf8))
        try ExtendedAttributes.removeValue(for: "user.test.a", at: path)
        try ExtendedAttributes.removeValue(for: "user.test.a", at: path)  // removing a missing one is fine
        #expect(try ExtendedAttributes.value("user.test.a", at: path) == nil)
        #expect(try !ExtendedAttributes.names(at: path).contains("user.test.a"))
    }

    @Test func largeValuesRoundTrip() throws {
        let (folder, path) = try makeFile()
        defer { try? FileManager.default.removeItem(at: folder) }
        let value = (0..<3000).map { UInt8(truncatingIfNeeded: $0) }
        try ExtendedAttributes.setValue(value, for: "user.test.large", at: path)
        #expect(try ExtendedAttributes.value("user.test.large", at: path) == value)
    }

    @Test func copyUserAttributesCopiesTheUserNamespace() throws {
        let (folder, source) = try makeFile()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("copy").path
        #expect(FileManager.default.createFile(atPath: destination, contents: nil))
        try ExtendedAttributes.setValue(Array("one".utf8), for: "user.test.one", at: source)
        try ExtendedAttributes.setValue(BackupExclusion.attributeValue, for: BackupExclusion.attributeName, at: source)
        try ExtendedAttributes.copyUserAttributes(from: source, to: destination)
        #expect(try ExtendedAttributes.value("user.test.one", at: destination) == Array("one".utf8))
        #expect(try BackupExclusion.isExcluded(destination))
        // A missing source is skipped silently.
        try ExtendedAttributes.copyUserAttributes(from: folder.appendingPathComponent("missing").path, to: destination)
    }

    @Test func safeSaveKeepsUserAttributes() throws {
        let (folder, path) = try makeFile("v1")
        defer { try? FileManager.default.removeItem(at: folder) }
        try ExtendedAttributes.setValue(Array("id".utf8), for: "user.ubiquity.item-id", at: path)
        try BackupExclusion.setExcluded(true, path)
        try SafeSave.write(Data("v2".utf8), to: path)
        #expect(try ExtendedAttributes.value("user.ubiquity.item-id", at: path) == Array("id".utf8))
        #expect(try BackupExclusion.isExcluded(path))
    }

    @Test func unsupportedFileSystemsAndMissingItemsAreReported() throws {
        do {
            try ExtendedAttributes.setValue([1], for: "user.test", at: "/proc/self/status")
            Issue.record("procfs should refuse user extended attributes")
        } catch let error as UbiquityError {
            #expect(error.code == .unsupported)
            #expect(error.message.contains("/proc/self/status"))
        }
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("ubiq-missing-\(UUID().uuidString)").path
        do {
            _ = try ExtendedAttributes.value("user.test", at: missing)
            Issue.record("a missing file should be reported")
        } catch let error as UbiquityError {
            #expect(error.code == .notFound)
        }
    }
}
