// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
import UbiquityCore

@Suite("CanonicalPath")
struct CanonicalPathTests {
    @Test(arguments: [
        ("/", "/"), ("//", "/"), ("/a/./b/../c//", "/a/c"), ("/..", "/"), ("/../a", "/a"),
        ("//a///b/", "/a/b"), ("/a/b/../../..", "/"), ("/a/.b/..c", "/a/.b/..c"),
    ])
    func normalize(_ input: String, _ expected: String) {
        #expect(CanonicalPath.normalize(input) == expected)
    }

    @Test func parentsAndComponents() {
        #expect(CanonicalPath.parentPath(of: "/a/b/c") == "/a/b")
        #expect(CanonicalPath.parentPath(of: "/a") == "/")
        #expect(CanonicalPath.parentPath(of: "/") == "/")
        #expect(CanonicalPath.lastComponent(of: "/a/b/c") == "c")
        #expect(CanonicalPath.lastComponent(of: "/a") == "a")
        #expect(CanonicalPath.ancestors(of: "/a/b/c") == ["/a/b", "/a", "/"])
        #expect(CanonicalPath.ancestors(of: "/a") == ["/"])
        #expect(CanonicalPath.ancestors(of: "/").isEmpty)
    }

    @Test func sameOrDescendant() {
        #expect(CanonicalPath.isSameOrDescendant("/a/b", of: "/a"))
        #expect(CanonicalPath.isSameOrDescendant("/a/b/c", of: "/a"))
        #expect(CanonicalPath.isSameOrDescendant("/a", of: "/a"))
        #expect(CanonicalPath.isSameOrDescendant("/anything", of: "/"))
        #expect(CanonicalPath.isSameOrDescendant("/", of: "/"))
        #expect(!CanonicalPath.isSameOrDescendant("/ab", of: "/a"))
        #expect(!CanonicalPath.isSameOrDescendant("/a", of: "/a/b"))
        #expect(!CanonicalPath.isSameOrDescendant("/b/a", of: "/a"))
    }

    @Test func rebase() {
        #expect(CanonicalPath.rebase("/old/x/y", from: "/old", to: "/new") == "/new/x/y")
        #expect(CanonicalPath.rebase("/old", from: "/old", to: "/new/place") == "/new/place")
    }

    @Test func relativePathsAreRefused() throws {
        for path in ["", "a/b", "./a", "../a"] {
            let error = try #require(throws: UbiquityError.self) { try CanonicalPath.canonicalize(path) }
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("relative"))
        }
    }

    @Test func canonicalizeResolvesSymlinkedParentsAndKeepsMissingLeaves() throws {
        let base = try Self.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: base) }
        try FileManager.default.createDirectory(atPath: base + "/real/dir", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: base + "/link", withDestinationPath: base + "/real")
        try Data().write(to: URL(fileURLWithPath: base + "/real/dir/file"))
        try FileManager.default.createSymbolicLink(atPath: base + "/real/dir/leaf", withDestinationPath: "file")

        #expect(try CanonicalPath.canonicalize("/") == "/")
        #expect(try CanonicalPath.canonicalize(base + "/link/dir") == base + "/real/dir")
        #expect(try CanonicalPath.canonicalize(base + "/link/dir/file") == base + "/real/dir/file")
        #expect(try CanonicalPath.canonicalize(base + "/link/dir/missing") == base + "/real/dir/missing")
        #expect(try CanonicalPath.canonicalize(base + "/link/dir/missing/deeper/leaf") == base + "/real/dir/missing/deeper/leaf")
        #expect(try CanonicalPath.canonicalize(base + "/link/./dir//x/../file") == base + "/real/dir/file")
        // The last component is only resolved on request.
        #expect(try CanonicalPath.canonicalize(base + "/link/dir/leaf") == base + "/real/dir/leaf")
        #expect(try CanonicalPath.canonicalize(base + "/link/dir/leaf", resolveLast: true) == base + "/real/dir/file")
        #expect(try CanonicalPath.canonicalize(base + "/link", resolveLast: true) == base + "/real")
        #expect(try CanonicalPath.canonicalize(base + "/link") == base + "/link")
        #expect(try CanonicalPath.canonicalize(base + "/link/dir/gone", resolveLast: true) == base + "/real/dir/gone")
    }

    /// A fresh temporary directory with its own symbolic links resolved.
    private static func makeTemporaryDirectory() throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ubiq-canonical-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        guard let resolved = realpath(url.path, nil) else { throw UbiquityError.posix("realpath", path: url.path) }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}

struct CanonicalPathKernelWalkTests {
    @Test("'..' after a symbolic link applies to the link's target, as the kernel does")
    func dotDotAfterLink() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ubq-walk-" + UUID().uuidString).path
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/a/b", withIntermediateDirectories: true)
        try Data("hi".utf8).write(to: URL(fileURLWithPath: root + "/a/target"))
        try FileManager.default.createSymbolicLink(atPath: root + "/lb", withDestinationPath: "a/b")
        let real = try CanonicalPath.canonicalize(root)
        #expect(try CanonicalPath.canonicalize(root + "/lb/../target") == real + "/a/target")
        // The last component's link is kept unless asked; resolveLast follows it.
        #expect(try CanonicalPath.canonicalize(root + "/lb") == real + "/lb")
        #expect(try CanonicalPath.canonicalize(root + "/lb", resolveLast: true) == real + "/a/b")
        // A trailing slash after a file is refused, as the kernel refuses it.
        #expect(throws: UbiquityError.self) { try CanonicalPath.canonicalize(root + "/a/target/") }
        #expect(try CanonicalPath.canonicalize(root + "/a/") == real + "/a")
    }

    @Test("symbolic link loops are an error, not a hang")
    func loops() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ubq-loop-" + UUID().uuidString).path
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: root + "/x", withDestinationPath: "y")
        try FileManager.default.createSymbolicLink(atPath: root + "/y", withDestinationPath: "x")
        #expect(throws: UbiquityError.self) { try CanonicalPath.canonicalize(root + "/x/file") }
    }
}
