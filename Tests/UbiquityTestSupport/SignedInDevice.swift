// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing

/// A device signed in with `ubiq account login` running `ubiq daemon` with no credentials.
package final class SignedInDevice: Sendable {
    package let device = Device()
    package let process = SyncRig.LockedProcess()
    package var home: URL { device.root.appendingPathComponent("home") }
    package var folder: URL { home.appendingPathComponent("Ubiquity") }

    /// A device of its own, not signed in.
    package init() {}

    package func login(_ server: String, user: String, password: String) throws {
        let login = try device.run(["account", "login", "--server", server, "--user", user, "--password-stdin", "--device-name", user + "-device"],
                                   input: password + "\n")
        #expect(login.status == 0, "\(login.stderr)")
    }

    package func startDaemon() throws {
        let daemon = try device.start(Binaries.ubiq, ["daemon", "--log-level", "warning", "--sync-poll-interval", "2"])
        guard daemon.waitForLine(containing: "coordination service listening on", seconds: 60) != nil else {
            daemon.kill()
            throw DeviceError.didNotStart("ubiq daemon")
        }
        process.set(daemon)
    }

    package func file(_ relative: String, in folder: URL? = nil) -> String? {
        (try? Data(contentsOf: (folder ?? self.folder).appendingPathComponent(relative))).map { String(decoding: $0, as: UTF8.self) }
    }

    deinit { process.take()?.kill(SIGTERM) }
}
