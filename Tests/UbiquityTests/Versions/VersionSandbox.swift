// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import Ubiquity

/// A private temporary folder and version store for one test, removed when the sandbox goes away.
///
/// The store is chosen with the task-local `VersionStoreLocation.override`, so tests never touch
/// the real `$XDG_DATA_HOME` and never change the process environment (they run in parallel).
final class VersionSandbox: Sendable {
    /// The sandbox folder, with symbolic links resolved.
    let root: URL
    /// The user-visible folder holding the test's files.
    let folder: URL
    /// The version store.
    let store: URL

    init() throws {
        let base = FileManager.default.temporaryDirectory
            .appendingPathComponent("ubiq-versions-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        root = URL(fileURLWithPath: try CanonicalPath.canonicalize(base.path, resolveLast: true), isDirectory: true)
        folder = root.appendingPathComponent("Documents", isDirectory: true)
        store = root.appendingPathComponent("store", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: root) }

    /// Runs `body` with this sandbox's version store.
    func run<T>(_ body: () throws -> T) throws -> T {
        try VersionStoreLocation.$override.withValue(store) { try body() }
    }

    /// Runs `body` with this sandbox's version store (async form; child tasks inherit it).
    func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        try await VersionStoreLocation.$override.withValue(store) { try await body() }
    }

    /// Writes `text` to `name` inside ``folder`` and returns its URL.
    @discardableResult
    func write(_ text: String, to name: String) throws -> URL {
        let url = folder.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
        return url
    }

    /// The text in the file at `url`, or nil.
    func read(_ url: URL) -> String? {
        FileManager.default.contents(atPath: url.path).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The JSON manifests in the store, decoded loosely.
    func manifests() throws -> [[String: Any]] {
        let items = store.appendingPathComponent("items")
        let ids = (try? FileManager.default.contentsOfDirectory(atPath: items.path)) ?? []
        return try ids.compactMap { id in
            guard let data = FileManager.default.contents(atPath: items.appendingPathComponent(id).appendingPathComponent("manifest.json").path) else { return nil }
            return try JSONSerialization.jsonObject(with: data) as? [String: Any]
        }
    }

    /// Every file under the store whose name starts with `SafeSave.temporaryPrefix`.
    func leftoverTemporaryFiles() -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: store.path)
        var found: [String] = []
        while let name = enumerator?.nextObject() as? String {
            if (name as NSString).lastPathComponent.hasPrefix(SafeSave.temporaryPrefix) { found.append(name) }
        }
        return found
    }
}

extension VersionSandbox {
    /// Expects `body` to throw a `UbiquityError` with `code`; returns the error.
    @discardableResult
    static func expectError<T>(_ code: UbiquityError.Code, sourceLocation: SourceLocation = #_sourceLocation,
                               _ body: () throws -> T) -> UbiquityError? {
        do {
            _ = try body()
            Issue.record("expected a \(code) error, got none", sourceLocation: sourceLocation)
        } catch let error as UbiquityError {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
            return error
        } catch {
            Issue.record("expected UbiquityError \(code), got \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }
}
