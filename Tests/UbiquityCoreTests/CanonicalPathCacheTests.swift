// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
import UbiquityCore

/// ``CanonicalPathCache`` answers what ``CanonicalPath/canonicalize(_:resolveLast:)`` answers,
/// for every kind of path a claim may name (linked folders, `..`, trailing slashes, links as
/// the last component, missing leaves, loops).
@Suite("CanonicalPathCache")
struct CanonicalPathCacheTests {
    @Test func answersWhatTheWholeWalkAnswers() throws {
        let base = try Self.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let files = FileManager.default
        try files.createDirectory(atPath: base + "/real/dir", withIntermediateDirectories: true)
        try files.createSymbolicLink(atPath: base + "/link", withDestinationPath: base + "/real")
        try files.createSymbolicLink(atPath: base + "/relative", withDestinationPath: "real/dir")
        try Data().write(to: URL(fileURLWithPath: base + "/real/dir/file"))
        try files.createSymbolicLink(atPath: base + "/real/dir/leaf", withDestinationPath: "file")

        let paths = [
            "/", "/a", base, base + "/real/dir/file", base + "/link/dir/file", base + "/link/dir/leaf",
            base + "/relative/file", base + "/relative/leaf", base + "/link/dir/missing", base + "/link/missing/deeper",
            base + "/link/dir/../dir/file", base + "/link/dir/.", base + "/link/dir/..", base + "/link/dir/",
            base + "//link///dir/file", base + "/real/dir/file/", base + "/link",
        ]
        for resolveLast in [false, true] {
            var cache = CanonicalPathCache()
            // twice: the second round answers from the cache
            for path in paths + paths {
                let expected = Result { try CanonicalPath.canonicalize(path, resolveLast: resolveLast) }
                let answer = Result { try cache.canonicalize(path, resolveLast: resolveLast) }
                switch (expected, answer) {
                case (.success(let expected), .success(let answer)): #expect(answer == expected, "\(path) resolveLast \(resolveLast)")
                case (.failure, .failure): break
                default: Issue.record("\(path) resolveLast \(resolveLast): \(expected) vs \(answer)")
                }
            }
        }
    }

    @Test func loopsAndRelativePathsStillThrow() throws {
        let root = try Self.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createSymbolicLink(atPath: root + "/x", withDestinationPath: "y")
        try FileManager.default.createSymbolicLink(atPath: root + "/y", withDestinationPath: "x")
        var cache = CanonicalPathCache()
        #expect(throws: UbiquityError.self) { try cache.canonicalize(root + "/x/file") }
        #expect(throws: UbiquityError.self) { try cache.canonicalize(root + "/x/other") }
        let error = try #require(throws: UbiquityError.self) { try cache.canonicalize("a/b") }
        #expect(error.code == .invalidArgument)
    }

    private static func makeTemporaryDirectory() throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ubiq-canonical-cache-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        guard let resolved = realpath(url.path, nil) else { throw UbiquityError.posix("realpath", path: url.path) }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
