// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
import UbiquityCore

@Suite("UbiquityPaths")
struct UbiquityPathsTests {
    @Test func defaultsDeriveFromHome() {
        let paths = UbiquityPaths(environment: ["HOME": "/home/u"])
        #expect(paths.home.path == "/home/u")
        #expect(paths.dataDirectory.path == "/home/u/.local/share/ubiquity")
        #expect(paths.stateDirectory.path == "/home/u/.local/state/ubiquity")
        #expect(paths.configDirectory.path == "/home/u/.config/ubiquity")
        #expect(paths.runtimeDirectory.path == "/tmp/ubiquity-\(getuid())")
        #expect(paths.containersDirectory.path == "/home/u/.local/share/ubiquity/containers")
        #expect(paths.versionsDirectory.path == "/home/u/.local/share/ubiquity/versions")
        #expect(paths.accountFile.path == "/home/u/.config/ubiquity/account.json")
        #expect(paths.coordinationSocket.path == "/tmp/ubiquity-\(getuid())/coordination.sock")
        #expect(paths.coordinationLockFile.path == "/tmp/ubiquity-\(getuid())/coordination.locks")
    }

    @Test func xdgVariablesOverrideTheDefaults() throws {
        let paths = UbiquityPaths(environment: [
            "HOME": "/home/u", "XDG_DATA_HOME": "/d", "XDG_STATE_HOME": "/s",
            "XDG_CONFIG_HOME": "/c", "XDG_RUNTIME_DIR": "/run/user/1000",
        ])
        #expect(paths.dataDirectory.path == "/d/ubiquity")
        #expect(paths.containersDirectory.path == "/d/ubiquity/containers")
        #expect(paths.stateDirectory.path == "/s/ubiquity")
        #expect(try paths.keyValueStoreFile(for: ContainerIdentifier("iCloud.com.example.Notes")).path
                == "/s/ubiquity/kvs/iCloud.com.example.Notes.sqlite")
        #expect(paths.configDirectory.path == "/c/ubiquity")
        #expect(paths.accountFile.path == "/c/ubiquity/account.json")
        #expect(paths.runtimeDirectory.path == "/run/user/1000/ubiquity")
        #expect(paths.coordinationSocket.path == "/run/user/1000/ubiquity/coordination.sock")
    }

    @Test func ubiquityHomeReplacesTheDataDirectory() {
        let paths = UbiquityPaths(environment: ["HOME": "/home/u", "XDG_DATA_HOME": "/d", "UBIQUITY_HOME": "/devices/b"])
        #expect(paths.dataDirectory.path == "/devices/b")
        #expect(paths.containersDirectory.path == "/devices/b/containers")
        #expect(paths.versionsDirectory.path == "/devices/b/versions")
        #expect(paths.configDirectory.path == "/home/u/.config/ubiquity")  // only data moves
    }

    @Test func relativeValuesAreIgnored() {
        let paths = UbiquityPaths(environment: [
            "HOME": "/home/u", "XDG_DATA_HOME": "rel/data", "XDG_STATE_HOME": "./s",
            "XDG_CONFIG_HOME": "c", "XDG_RUNTIME_DIR": "run", "UBIQUITY_HOME": "devices/b",
        ])
        #expect(paths == UbiquityPaths(environment: ["HOME": "/home/u"]))
        let relativeHome = UbiquityPaths(environment: ["HOME": "relative/home"])
        #expect(relativeHome.home.path.hasPrefix("/"))
        #expect(!relativeHome.dataDirectory.path.contains("relative/home"))
    }

    @Test func emptyEnvironmentStillGivesAbsolutePaths() {
        let paths = UbiquityPaths(environment: [:])
        for url in [paths.home, paths.dataDirectory, paths.stateDirectory, paths.configDirectory, paths.runtimeDirectory] {
            #expect(url.path.hasPrefix("/"))
        }
    }

    @Test func ensureDirectoryCreatesPrivateFolders() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("ubiq-paths-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: base) }
        let nested = base.appendingPathComponent("a/b/c", isDirectory: true)
        try UbiquityPaths.ensureDirectory(nested)
        try UbiquityPaths.ensureDirectory(nested)  // idempotent
        #expect(FileStamp.of(nested.path)?.isDirectory == true)
        #expect(FileStamp.of(nested.path)?.mode == 0o700)
        let file = base.appendingPathComponent("file")
        try Data().write(to: file)
        let error = try #require(throws: UbiquityError.self) {
            try UbiquityPaths.ensureDirectory(file.appendingPathComponent("below", isDirectory: true))
        }
        #expect(error.code == .io)
        #expect(error.message.contains(file.path))
    }
}
