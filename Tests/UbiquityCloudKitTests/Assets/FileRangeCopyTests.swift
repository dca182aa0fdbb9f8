// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import UbiquityCore
import UbiquityCloudKit

/// ``FileRangeCopy``: byte-exact copies of ranges at any offsets (aligned, equally misaligned
/// as an unchanged region of an edited file is, or shifted), whatever the file system does.
struct FileRangeCopyTests {
    @Test("ranges at aligned, equally misaligned and shifted offsets are copied exactly",
          arguments: [(0, 0, 100_000), (1234, 1234, 300_000), (4095, 4095, 8193), (100, 7, 50_000), (5000, 5000, 10), (333, 333, 8192 + 1)])
    func copiesExactly(source: Int, target: Int, count: Int) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ubiquity-range-copy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var bytes = [UInt8](repeating: 0, count: source + count + 777)
        for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: index &* 2_654_435_761 >> 7) }
        let sourcePath = folder.appendingPathComponent("source").path
        let targetPath = folder.appendingPathComponent("target").path
        #expect(FileManager.default.createFile(atPath: sourcePath, contents: Data(bytes)))
        let input = open(sourcePath, O_RDONLY)
        let output = open(targetPath, O_RDWR | O_CREAT, 0o644)
        defer { close(input); close(output) }
        try FileRangeCopy.copy(from: input, at: Int64(source), to: output, at: Int64(target), count: Int64(count))
        let copied = try #require(FileManager.default.contents(atPath: targetPath))
        #expect(copied.count == target + count)
        #expect(Array(copied[target...]) == Array(bytes[source..<source + count]))
        #expect(copied[..<target].allSatisfy { $0 == 0 })
    }
}
