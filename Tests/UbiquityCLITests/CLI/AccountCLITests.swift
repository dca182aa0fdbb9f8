// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
import Ubiquity
import UbiquityCore
import UbiquityCloudKit

/// `ubiq account login|status|logout` against a real `ubiq serve`, and the library's view of the
/// account (identity token, a container signed in with the device token).
@Suite struct AccountCLITests {
    @Test func loginStatusSwitchAndLogout() async throws {
        let device = Device()
        let data = device.root.appendingPathComponent("server").path
        #expect(try device.run(["admin", "--data", data, "user", "add", "mei", "--password-stdin"], input: "correct horse").status == 0)
        let webAuth = try device.run(["admin", "--data", data, "user", "add", "ravi"])
        #expect(webAuth.status == 0)
        let server = try ServeRig.startServer(device, ["--data", data])
        defer { server.process.kill(SIGTERM); _ = server.process.wait(seconds: 30) }

        // nobody signed in
        let none = try device.run(["account", "status"])
        #expect(none.status == 1)
        #expect(none.stdout.contains("not signed in"))
        // bad input: no server, no password source, a wrong password, an unreachable server
        #expect(try device.run(["account", "login", "--user", "mei"]).status == 64)
        let noPassword = try device.run(["account", "login", "--server", server.url, "--user", "mei"])
        #expect(noPassword.status == 64)
        #expect(noPassword.stderr.contains("--password-stdin"))
        let wrong = try device.run(["account", "login", "--server", server.url, "--user", "mei", "--password-stdin"], input: "nope\n")
        #expect(wrong.status == 77)
        #expect(wrong.stderr.contains("wrong"))
        #expect(try device.run(["account", "login", "--server", "http://127.0.0.1:1", "--user", "mei", "--password-stdin"], input: "x\n").status == 69)
        #expect(try device.run(["account", "login", "--server", "ftp://example.org", "--user", "mei", "--password-stdin"], input: "x\n").status == 64)

        // sign in with the password
        let login = try device.run(["account", "login", "--server", server.url, "--user", "mei", "--password-stdin", "--device-name", "desk"],
                                   input: "correct horse\n")
        #expect(login.status == 0, "\(login.stderr)")
        #expect(login.stdout.contains("signed in as mei"))
        let accountFile = device.root.appendingPathComponent("config/ubiquity/account.json")
        let attributes = try FileManager.default.attributesOfItem(atPath: accountFile.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let status = try device.run(["account", "status", "--json"])
        #expect(status.status == 0)
        #expect(status.stdout.contains(#""user":"mei""#) && status.stdout.contains(#""token":"accepted""#) && status.stdout.contains(#""deviceName":"desk""#))

        // the library: the identity token, and a container on the account's device token
        let file = UbiquityAccountFile(url: accountFile)
        let meToken = try #require(file.identityToken)
        let account = try #require(try file.read())
        let firstDeviceToken = try #require(account.deviceToken)
        let container = try CloudContainer.signedIn(identifier: "iCloud.org.example.Anything", accountFile: file)
        let saved = try await container.privateCloudDatabase.save(Record(recordType: "Note"))
        #expect(saved.recordChangeTag != nil)

        // switch to another account with an admin-issued device token: the identity changes and
        // the previous device token is revoked
        let issued = try device.run(["admin", "--data", data, "user", "token", "ravi", "--device"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(issued.hasPrefix("ubqdev_"))
        #expect(try device.run(["account", "login", "--server", server.url, "--token", "not-a-token"]).status == 64)
        #expect(try device.run(["account", "login", "--server", server.url, "--token", "ubqdev_" + String(repeating: "A", count: 43)]).status == 77)
        // the web-auth token `user add` printed cannot sync a device: refused at login, naming the right one
        let webToken = webAuth.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let refused = try device.run(["account", "login", "--server", server.url, "--token", webToken])
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("user token NAME --device"), "\(refused.stderr)")
        // and by the server, for any client that asks it
        await #expect(throws: CloudKitError.self) { try await AccountSignIn(serverURL: URL(string: server.url)!).signIn(token: webToken, deviceName: "x") }
        let switched = try device.run(["account", "login", "--server", server.url, "--token", issued])
        #expect(switched.status == 0, "\(switched.stderr)")
        #expect(switched.stdout.contains("signed in as ravi"))
        #expect(file.identityToken != meToken)
        let revoked = try AccountSignIn(serverURL: URL(string: server.url)!)
        await #expect(throws: CloudKitError.self) { try await revoked.signIn(token: firstDeviceToken, deviceName: "x") }

        // sign out: the token stops working and the file is gone
        let logout = try device.run(["account", "logout"])
        #expect(logout.status == 0)
        #expect(logout.stdout.contains("signed out ravi"))
        #expect(file.identityToken == nil)
        await #expect(throws: CloudKitError.self) { try await revoked.signIn(token: issued, deviceName: "x") }
        #expect(throws: CloudKitError.self) { try CloudContainer.signedIn(identifier: "iCloud.org.example.Anything", accountFile: file) }
        #expect(try device.run(["account", "logout"]).stdout.contains("not signed in"))
    }
}
