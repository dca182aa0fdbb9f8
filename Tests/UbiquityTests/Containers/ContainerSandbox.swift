// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Synchronization
import Ubiquity

/// A private temporary tree with its own XDG environment, so container tests never touch the
/// real home or the process environment and can run in parallel. Removed when released: keep it
/// in a stored property of the suite (swift-testing makes one suite value per test).
final class ContainerSandbox: Sendable {
    /// The sandbox's root, with symbolic links resolved.
    let root: URL
    /// `HOME` and the `XDG_*` variables pointing inside `root`.
    let environment: [String: String]

    init() throws {
        let base = FileManager.default.temporaryDirectory
            .appendingPathComponent("ubiq-containers-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        guard let real = realpath(base.path, nil) else { throw UbiquityError.posix("realpath", path: base.path) }
        defer { free(real) }
        root = URL(fileURLWithPath: String(cString: real), isDirectory: true)
        environment = [
            "HOME": root.appendingPathComponent("home").path,
            "XDG_DATA_HOME": root.appendingPathComponent("data").path,
            "XDG_CONFIG_HOME": root.appendingPathComponent("config").path,
            "XDG_STATE_HOME": root.appendingPathComponent("state").path,
            "XDG_RUNTIME_DIR": root.appendingPathComponent("run").path,
        ]
    }

    deinit { try? FileManager.default.removeItem(at: root) }

    var paths: UbiquityPaths { UbiquityPaths(environment: environment) }

    /// ``environment`` with `extra` added (or replaced).
    func environment(adding extra: [String: String]) -> [String: String] {
        environment.merging(extra) { _, new in new }
    }

    /// Containers declared by `identifiers` and by `extra` (such as `UBIQUITY_CONTAINERS`).
    func containers(_ identifiers: [String] = [], adding extra: [String: String] = [:]) throws -> UbiquityContainers {
        try UbiquityContainers(declaring: identifiers, environment: environment(adding: extra))
    }

    /// A path inside the sandbox.
    func path(_ relative: String) -> String { root.path + "/" + relative }

    func makeDirectory(_ relative: String) throws {
        try FileManager.default.createDirectory(atPath: path(relative), withIntermediateDirectories: true)
    }

    func symlink(_ relative: String, to target: String) throws {
        try FileManager.default.createSymbolicLink(atPath: path(relative), withDestinationPath: target)
    }

    /// The permission bits of the item at `path`.
    static func mode(_ path: String) -> UInt32? { FileStamp.of(path)?.mode }
}

/// Waits until `condition` holds, polling; false if it still does not after `limit` (generous:
/// tests assert on outcomes, never on timing).
func containersEventually(within limit: Duration = .seconds(30), _ condition: @Sendable () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now.advanced(by: limit)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return condition()
}

/// Collects values from any thread.
final class ContainersRecorder<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])
    func append(_ value: Value) { values.withLock { $0.append(value) } }
    var all: [Value] { values.withLock { $0 } }
}
