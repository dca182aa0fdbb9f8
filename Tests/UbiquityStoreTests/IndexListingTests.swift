// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Logging
import Testing
@testable import UbiquityStore

/// The merge of `ubiq ls`: a sorted walk of a real temporary tree beside index rows (a snapshot
/// built in memory, and one read from a real index file).
@Suite struct IndexListingTests {
    /// One listed line: the name shown, the kind, on disk or not, the status source.
    struct Line: Equatable, CustomStringConvertible {
        var name: String
        var kind: IndexListing.Kind
        var onDisk: Bool
        var attributes: UbiquitousAttributes?
        var description: String { "\(name) \(kind) \(onDisk ? "disk" : "index-only") \(attributes.map { "\($0)" } ?? "-")" }
    }

    static func list(_ root: String, _ snapshot: IndexStatusSnapshot, _ options: IndexListing.Options) throws -> (lines: [Line], paths: [String], failures: [String]) {
        var lines: [Line] = [], paths: [String] = [], failures: [String] = []
        try IndexListing.walk(directory: root, snapshot: snapshot, options: options) { item, path, start in
            lines.append(Line(name: String(decoding: path[start...], as: UTF8.self), kind: item.kind, onDisk: item.isOnDisk,
                              attributes: item.attributes))
            paths.append(String(decoding: path, as: UTF8.self))
        } failed: { path, _ in
            failures.append(path)
        }
        return (lines, paths, failures)
    }

    static func makeTree() throws -> String {
        let root = MetadataIndexTestSupport.temporaryFolder()
        let fm = FileManager.default
        for folder in ["a", "a/x", "z", ".hidden-dir"] { try fm.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true) }
        for file in ["a b", "a-1", "a.txt", "a/x/deep.txt", "a/y.txt", "line\nbreak", "z/disk-only.txt", ".dot", "B", "p.bin"] {
            try Data(file.utf8).write(to: URL(fileURLWithPath: root + "/" + file))
        }
        // a placeholder: the size of the real file, no data
        #expect(truncate(root + "/p.bin", 1_000_000) == 0)
        symlink("a.txt", root + "/link")
        return root
    }

    static let uploaded = UbiquitousAttributes(isUploaded: true, percentUploaded: 100)
    static let evicted = UbiquitousAttributes(isUploaded: true, downloadingStatus: .notDownloaded)
    static let going = UbiquitousAttributes(isUploading: true, percentUploaded: 42)

    @Test("recursive: byte-wise order, each folder before its contents; disk-only, index-only and implied folders")
    func recursiveMerge() throws {
        let root = try Self.makeTree()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let rows: [String: UbiquitousAttributes] = [
            root + "/a": Self.uploaded, root + "/a b": Self.uploaded, root + "/a-1": Self.going, root + "/a.txt": Self.uploaded,
            root + "/a/x": Self.uploaded, root + "/a/x/deep.txt": Self.uploaded, root + "/a/gone.txt": Self.uploaded,
            root + "/line\nbreak": Self.uploaded, root + "/p.bin": Self.evicted,
            root + "/old/sub/f.txt": Self.uploaded,  // a deleted folder with no rows of its own
            root + "/deleted.txt": Self.uploaded, root + "/.dot": Self.uploaded,
            "/elsewhere/x": Self.uploaded, root + "-sibling/x": Self.uploaded,  // outside: never listed
        ]
        let snapshot = IndexStatusSnapshot(attributes: rows, folders: [root + "/a", root + "/a/x"])
        let (lines, paths, failures) = try Self.list(root, snapshot, IndexListing.Options(recursive: true))
        #expect(failures.isEmpty)
        let expected: [Line] = [
            Line(name: "B", kind: .file, onDisk: true, attributes: nil),
            Line(name: "a", kind: .folder, onDisk: true, attributes: Self.uploaded),
            Line(name: "a/gone.txt", kind: .file, onDisk: false, attributes: Self.uploaded),
            Line(name: "a/x", kind: .folder, onDisk: true, attributes: Self.uploaded),
            Line(name: "a/x/deep.txt", kind: .file, onDisk: true, attributes: Self.uploaded),
            Line(name: "a/y.txt", kind: .file, onDisk: true, attributes: nil),
            Line(name: "a b", kind: .file, onDisk: true, attributes: Self.uploaded),
            Line(name: "a-1", kind: .file, onDisk: true, attributes: Self.going),
            Line(name: "a.txt", kind: .file, onDisk: true, attributes: Self.uploaded),
            Line(name: "deleted.txt", kind: .file, onDisk: false, attributes: Self.uploaded),
            Line(name: "line\nbreak", kind: .file, onDisk: true, attributes: Self.uploaded),
            Line(name: "link", kind: .symlink, onDisk: true, attributes: nil),
            Line(name: "old", kind: .folder, onDisk: false, attributes: nil),
            Line(name: "old/sub", kind: .folder, onDisk: false, attributes: nil),
            Line(name: "old/sub/f.txt", kind: .file, onDisk: false, attributes: Self.uploaded),
            Line(name: "p.bin", kind: .file, onDisk: true, attributes: Self.evicted),
            Line(name: "z", kind: .folder, onDisk: true, attributes: nil),
            Line(name: "z/disk-only.txt", kind: .file, onDisk: true, attributes: nil),
        ]
        #expect(lines == expected, "\(lines)")
        #expect(paths.first == root + "/B")
        #expect(paths.contains(root + "/a/x/deep.txt"))

        // -a: the hidden ones too, in order
        let all = try Self.list(root, snapshot, IndexListing.Options(recursive: true, all: true)).lines.map(\.name)
        #expect(all.prefix(3) == [".dot", ".hidden-dir", "B"], "\(all)")
    }

    @Test("one level, with sizes; an empty snapshot lists every item as not indexed")
    func oneLevel() throws {
        let root = try Self.makeTree()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let snapshot = IndexStatusSnapshot(attributes: [root + "/p.bin": Self.evicted, root + "/a/x": Self.uploaded, root + "/ghost": Self.uploaded],
                                           folders: [root + "/a/x"])
        var sizes: [String: Int64] = [:]
        var names: [String] = []
        try IndexListing.walk(directory: root, snapshot: snapshot, options: IndexListing.Options(stat: true)) { item, path, start in
            let name = String(decoding: path[start...], as: UTF8.self)
            names.append(name)
            if let size = item.size { sizes[name] = size }
            if name == "p.bin" { #expect(item.attributes == Self.evicted && item.modificationNanoseconds != nil) }
        } failed: { _, _ in }
        #expect(names == ["B", "a", "a b", "a-1", "a.txt", "ghost", "line\nbreak", "link", "p.bin", "z"], "\(names)")
        #expect(sizes["p.bin"] == 1_000_000 && sizes["a.txt"] == 5 && sizes["ghost"] == nil)

        let empty = try Self.list(root, IndexStatusSnapshot(attributes: [:]), IndexListing.Options(recursive: true))
        #expect(empty.lines.count == 13 && empty.lines.allSatisfy { $0.attributes == nil && $0.onDisk }, "\(empty.lines)")
    }

    @Test("the snapshot read from a real index file merges the same way")
    func fromIndexFile() throws {
        let root = try Self.makeTree()
        let database = root + "-index.sqlite"
        defer { try? FileManager.default.removeItem(atPath: root); unlink(database) }
        do {
            let index = try MetadataIndex(path: database, logger: MetadataIndexTestSupport.logger)
            _ = try index.apply([
                MetadataIndexTestSupport.folder(root + "/a"), MetadataIndexTestSupport.file(root + "/a.txt"),
                MetadataIndexTestSupport.file(root + "/a/y.txt"), MetadataIndexTestSupport.file(root + "/p.bin"),
                MetadataIndexTestSupport.folder(root + "/old"), MetadataIndexTestSupport.file(root + "/old/f.txt"),
            ])
            _ = try index.updateUbiquitousAttributes(path: root + "/p.bin", Self.evicted)
            _ = try index.updateUbiquitousAttributes(path: root + "/a.txt", Self.going)
        }
        let snapshot = try IndexStatusSnapshot.read(databasePath: database, under: root, recursive: true)
        #expect(snapshot.count == 6)
        #expect(snapshot[root + "/p.bin"]?.downloadingStatus == .notDownloaded)
        #expect(snapshot[root + "/a.txt"]?.percentUploaded == 42)
        #expect(snapshot[root + "/nothing"] == nil)
        let lines = try Self.list(root, snapshot, IndexListing.Options(recursive: true)).lines
        let byName = Dictionary(uniqueKeysWithValues: lines.map { ($0.name, $0) })
        #expect(byName["a/y.txt"]?.attributes != nil && byName["a/x/deep.txt"]?.attributes == nil)
        #expect(byName["old"]?.onDisk == false && byName["old"]?.kind == .folder)
        #expect(byName["old/f.txt"]?.onDisk == false && byName["old/f.txt"]?.kind == .file)
        #expect(lines.map(\.name) == lines.map(\.name).sorted { Self.walkOrder($0, $1) }, "\(lines)")

        // the same with the rows read on another thread while the tree is read (as `ubiq ls`)
        var concurrent: [Line] = []
        try IndexListing.walk(directory: root, options: IndexListing.Options(recursive: true), readingSnapshot: {
            (try? IndexStatusSnapshot.read(databasePath: database, under: root, recursive: true)) ?? IndexStatusSnapshot(attributes: [:])
        }) { item, path, start in
            concurrent.append(Line(name: String(decoding: path[start...], as: UTF8.self), kind: item.kind, onDisk: item.isOnDisk,
                                   attributes: item.attributes))
        } failed: { _, _ in }
        #expect(concurrent == lines)

        // one level: the children's rows only
        let level = try IndexStatusSnapshot.read(databasePath: database, under: root, recursive: false)
        #expect(level.count == 4)
    }

    /// The order of `ls -R` names: component by component, byte-wise.
    static func walkOrder(_ a: String, _ b: String) -> Bool {
        let left = a.split(separator: "/", omittingEmptySubsequences: false).map { Array($0.utf8) }
        let right = b.split(separator: "/", omittingEmptySubsequences: false).map { Array($0.utf8) }
        return left.lexicographicallyPrecedes(right) { $0.lexicographicallyPrecedes($1) }
    }
}
