// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Where Ubiquity keeps things, following the XDG base directory specification.
///
/// Every location comes from the environment (`HOME`, `XDG_DATA_HOME`, `XDG_STATE_HOME`,
/// `XDG_CONFIG_HOME`, `XDG_RUNTIME_DIR`, `UBIQUITY_HOME`) or from an explicit override, so that
/// several "devices" can run side by side on one machine.
public struct UbiquityPaths: Sendable, Equatable {
    /// The user's home directory.
    public var home: URL
    /// `$XDG_DATA_HOME/ubiquity` (default `~/.local/share/ubiquity`), or `$UBIQUITY_HOME`.
    public var dataDirectory: URL
    /// `$XDG_STATE_HOME/ubiquity` (default `~/.local/state/ubiquity`).
    public var stateDirectory: URL
    /// `$XDG_CONFIG_HOME/ubiquity` (default `~/.config/ubiquity`).
    public var configDirectory: URL
    /// `$XDG_RUNTIME_DIR/ubiquity` (default `/tmp/ubiquity-UID` when `XDG_RUNTIME_DIR` is unset).
    public var runtimeDirectory: URL

    /// Paths read from an environment (the process's by default).
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        func dir(_ value: String?) -> URL? {
            guard let value, value.hasPrefix("/") else { return nil }  // XDG: relative values are ignored
            return URL(fileURLWithPath: value, isDirectory: true)
        }
        let home = dir(environment["HOME"]) ?? URL(fileURLWithPath: NSHomeDirectory(), isDirectory: true)
        self.home = home
        if let ubiquityHome = dir(environment["UBIQUITY_HOME"]) {
            dataDirectory = ubiquityHome
        } else {
            dataDirectory = (dir(environment["XDG_DATA_HOME"]) ?? home.appendingPathComponent(".local/share"))
                .appendingPathComponent("ubiquity", isDirectory: true)
        }
        stateDirectory = (dir(environment["XDG_STATE_HOME"]) ?? home.appendingPathComponent(".local/state"))
            .appendingPathComponent("ubiquity", isDirectory: true)
        configDirectory = (dir(environment["XDG_CONFIG_HOME"]) ?? home.appendingPathComponent(".config"))
            .appendingPathComponent("ubiquity", isDirectory: true)
        if let runtime = dir(environment["XDG_RUNTIME_DIR"]) {
            runtimeDirectory = runtime.appendingPathComponent("ubiquity", isDirectory: true)
        } else {
            runtimeDirectory = URL(fileURLWithPath: "/tmp/ubiquity-\(getuid())", isDirectory: true)
        }
    }

    /// Where ubiquity containers live: `dataDirectory/containers`.
    public var containersDirectory: URL { dataDirectory.appendingPathComponent("containers", isDirectory: true) }
    /// Where file versions are kept, outside every user-visible folder: `dataDirectory/versions`.
    public var versionsDirectory: URL { dataDirectory.appendingPathComponent("versions", isDirectory: true) }
    /// The coordination service's socket: `runtimeDirectory/coordination.sock`.
    public var coordinationSocket: URL { runtimeDirectory.appendingPathComponent("coordination.sock") }
    /// The file whose byte-range locks give mutual exclusion when no daemon runs.
    public var coordinationLockFile: URL { runtimeDirectory.appendingPathComponent("coordination.locks") }
    /// Where the key-value stores live: `stateDirectory/kvs`.
    public var keyValueStoresDirectory: URL { stateDirectory.appendingPathComponent("kvs", isDirectory: true) }
    /// The key-value store of `container`: `stateDirectory/kvs/<container>.sqlite`.
    public func keyValueStoreFile(for container: ContainerIdentifier) -> URL {
        keyValueStoresDirectory.appendingPathComponent(container.rawValue + ".sqlite")
    }
    /// The signed-in account, written by `ubiq account` (a later issue) and read for the identity token.
    public var accountFile: URL { configDirectory.appendingPathComponent("account.json") }

    /// Creates `url` and its parents with mode 0700 if it is missing.
    public static func ensureDirectory(_ url: URL) throws {
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw UbiquityError(.io, "cannot create directory '\(url.path)'", underlying: error)
        }
    }
}
