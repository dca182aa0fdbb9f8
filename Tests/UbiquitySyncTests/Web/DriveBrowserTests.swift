// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
@testable import UbiquitySync

/// The web's Drive in a real browser: `Tests/Web/drive_browser.py` (Playwright from PyPI driving
/// Debian's chromium, headless) against a real `ubiq serve` and a real `ubiq daemon` device. It
/// signs in, sees what the device uploaded, uploads, makes a folder, renames, deletes and
/// restores from Recently Deleted, restores an older version, shares links (one with a
/// password, one that expires), and checks that stored names are shown as text; each change is
/// checked in the device's folder. Then, in the Console, it sees a record an app saved through
/// the API, the app's next request arrive in the live request log, deploys the schema and sees
/// the telemetry. Screenshots are kept under `.build/test-artifacts/web/`.
///
/// `scripts/test` installs chromium and Playwright and sets `UBIQUITY_REQUIRE_BROWSER=1`;
/// elsewhere the test is skipped when either is missing.
@Suite(.serialized) struct DriveBrowserTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../..").standardized
    static let script = repository.appendingPathComponent("Tests/Web/drive_browser.py")
    static let screenshots = repository.appendingPathComponent(".build/test-artifacts/web")

    /// Whether chromium and Playwright are here.
    static var browserAvailable: Bool {
        let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].contains { FileManager.default.isExecutableFile(atPath: $0) }
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        probe.arguments = ["python3", "-c", "import playwright.sync_api"]
        probe.standardOutput = FileHandle.nullDevice
        probe.standardError = FileHandle.nullDevice
        guard chromium, (try? probe.run()) != nil else { return false }
        probe.waitUntilExit()
        return probe.terminationStatus == 0
    }

    static var enabled: Bool {
        ProcessInfo.processInfo.environment["UBIQUITY_REQUIRE_BROWSER"] == "1" || browserAvailable
    }

    @Test(.enabled(if: DriveBrowserTests.enabled, "chromium or Playwright is missing (scripts/test installs them)"))
    func theDriveWorksInABrowser() async throws {
        let cloud = try SyncRig.Cloud()
        let password = "a browser's password"
        let set = try cloud.admin(["user", "password", "mei", "--password-stdin", "--keep-tokens"], input: password)
        #expect(set.status == 0, "\(set)")
        // an app's container that mei develops, and mei's token for the app's requests
        let consoleContainer = "iCloud.org.example.ConsoleApp"
        let apiToken = try cloud.admin(["container", "add", consoleContainer]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try cloud.admin(["container", "developers", consoleContainer, "--add", "mei"]).stdout.contains("mei"))
        let webToken = try cloud.admin(["user", "token", "mei"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let device = SyncRig.SyncDevice("laptop", cloud)
        try device.start()
        try device.write("from-a-device.txt", "written on the laptop")
        #expect(await SyncRig.eventuallyAsync("the device uploaded its file") {
            try await cloud.items()["from-a-device.txt"]?.hash == SyncRig.sha("written on the laptop")
        })
        let python = try cloud.device.start(URL(fileURLWithPath: "/usr/bin/env"), [
            "python3", Self.script.path, "--url", cloud.url, "--user", "mei", "--password", password,
            "--folder", device.folder.path, "--device-file", "from-a-device.txt", "--screenshots", Self.screenshots.path,
            "--server-database", cloud.device.root.appendingPathComponent("server/records.sqlite").path,
            "--console-container", consoleContainer, "--api-token", apiToken, "--web-token", webToken,
        ])
        let status = python.wait(seconds: 600)
        #expect(status == 0, "drive_browser.py:\n\(python.output.joined(separator: "\n"))\ndaemon:\n\(device.daemonOutput)")
    }
}
