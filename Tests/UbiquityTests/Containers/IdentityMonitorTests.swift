// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import Ubiquity

@Suite("UbiquityIdentityMonitor")
struct IdentityMonitorTests {
    private let sandbox: ContainerSandbox

    init() throws { sandbox = try ContainerSandbox() }

    private static let alice = UbiquityAccountFile.Account(server: "https://cloud.example.com", user: "alice")
    private static let bob = UbiquityAccountFile.Account(server: "https://cloud.example.com", user: "bob")

    @Test func tokenFollowsTheAccountFile() throws {
        let monitor = UbiquityIdentityMonitor(paths: sandbox.paths, notificationCenter: NotificationCenter())
        let file = UbiquityAccountFile(paths: sandbox.paths)
        #expect(monitor.token == nil)
        try file.write(Self.alice)
        #expect(monitor.token == UbiquityIdentityToken(account: Self.alice))
        try file.write(Self.bob)
        #expect(monitor.token == UbiquityIdentityToken(account: Self.bob))
        try file.remove()
        #expect(monitor.token == nil)
    }

    @Test func changesByAnotherWriterArePostedAndStreamed() async throws {
        let center = NotificationCenter()
        let monitor = UbiquityIdentityMonitor(paths: sandbox.paths, notificationCenter: center,
                                              interval: .milliseconds(50))
        let notifications = ContainersRecorder<Bool>()  // one element per notification: whether userInfo was nil
        let observer = center.addObserver(forName: .NSUbiquityIdentityDidChange, object: nil, queue: nil) { note in
            notifications.append(note.userInfo == nil && note.name.rawValue == "NSUbiquityIdentityDidChangeNotification")
        }
        defer { center.removeObserver(observer) }
        let streamed = ContainersRecorder<UbiquityIdentityToken?>()
        let stream = monitor.changes()
        let consumer = Task { for await token in stream { streamed.append(token) } }
        defer { consumer.cancel() }

        // Another process signs in: only the file changes; nobody reads the token here.
        try UbiquityAccountFile(paths: sandbox.paths).write(Self.alice)
        #expect(await containersEventually { streamed.all.count >= 1 && notifications.all.count >= 1 })
        #expect(streamed.all.first == .some(UbiquityIdentityToken(account: Self.alice)))
        #expect(notifications.all.allSatisfy { $0 })

        // Switching accounts, then signing out.
        try UbiquityAccountFile(paths: sandbox.paths).write(Self.bob)
        #expect(await containersEventually { streamed.all.last == .some(UbiquityIdentityToken(account: Self.bob)) })
        try UbiquityAccountFile(paths: sandbox.paths).remove()
        #expect(await containersEventually { streamed.all.count >= 3 && streamed.all.last == .some(nil) })
        #expect(await containersEventually { notifications.all.count == streamed.all.count })
        #expect(monitor.token == nil)
    }

    @Test func rewritingTheSameAccountIsNotAChange() async throws {
        let center = NotificationCenter()
        let file = UbiquityAccountFile(paths: sandbox.paths)
        try file.write(Self.alice)
        let monitor = UbiquityIdentityMonitor(paths: sandbox.paths, notificationCenter: center,
                                              interval: .milliseconds(50))
        let streamed = ContainersRecorder<UbiquityIdentityToken?>()
        let stream = monitor.changes()
        let consumer = Task { for await token in stream { streamed.append(token) } }
        defer { consumer.cancel() }
        #expect(monitor.token == UbiquityIdentityToken(account: Self.alice))
        try file.write(Self.alice)          // same account, new file: no change
        _ = monitor.token                   // forces a check of the new file
        try file.write(Self.bob)            // a real change, as a marker
        #expect(await containersEventually { !streamed.all.isEmpty })
        #expect(streamed.all == [UbiquityIdentityToken(account: Self.bob)])
    }

    /// The daemon's stream: every rewrite, a new device token for the same account included
    /// (not an identity change, so `changes()` stays quiet).
    @Test func rewritesWithANewTokenAreStreamedToTheDaemon() async throws {
        let file = UbiquityAccountFile(paths: sandbox.paths)
        var account = Self.alice
        account.deviceToken = "first"
        try file.write(account)
        let monitor = UbiquityIdentityMonitor(paths: sandbox.paths, notificationCenter: NotificationCenter(),
                                              interval: .milliseconds(50))
        let rewrites = ContainersRecorder<Bool>(), identities = ContainersRecorder<UbiquityIdentityToken?>()
        let rewriteStream = monitor.accountFileRewrites(), identityStream = monitor.changes()
        let consumers = [Task { for await _ in rewriteStream { rewrites.append(true) } },
                         Task { for await token in identityStream { identities.append(token) } }]
        defer { for consumer in consumers { consumer.cancel() } }
        account.deviceToken = "second"
        try file.write(account)
        #expect(await containersEventually { !rewrites.all.isEmpty })
        #expect(try file.read()?.deviceToken == "second")
        try file.write(Self.bob)  // a marker: an identity change comes through both
        #expect(await containersEventually { rewrites.all.count >= 2 && !identities.all.isEmpty })
        #expect(identities.all == [UbiquityIdentityToken(account: Self.bob)])
    }

    /// The kernel tells: with the timer an hour away, a sign-in by another writer still arrives.
    @Test func changesArriveWithoutTheTimer() async throws {
        let monitor = UbiquityIdentityMonitor(paths: sandbox.paths, notificationCenter: NotificationCenter(), interval: .seconds(3600))
        let streamed = ContainersRecorder<UbiquityIdentityToken?>()
        let stream = monitor.changes()
        let consumer = Task { for await token in stream { streamed.append(token) } }
        defer { consumer.cancel() }
        try UbiquityAccountFile(paths: sandbox.paths).write(Self.alice)
        #expect(await containersEventually { streamed.all == [UbiquityIdentityToken(account: Self.alice)] })
        try UbiquityAccountFile(paths: sandbox.paths).remove()
        #expect(await containersEventually { streamed.all.last == .some(nil) })
    }

    @Test func changesByAnotherProcessAreNoticed() async throws {
        let monitor = UbiquityIdentityMonitor(paths: sandbox.paths, notificationCenter: NotificationCenter(),
                                              interval: .milliseconds(50))
        #expect(monitor.token == nil)
        let streamed = ContainersRecorder<UbiquityIdentityToken?>()
        let stream = monitor.changes()
        let consumer = Task { for await token in stream { streamed.append(token) } }
        defer { consumer.cancel() }

        // A plain shell writes the file (not atomically, not through UbiquityAccountFile).
        let file = sandbox.paths.accountFile.path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", #"mkdir -p "$(dirname "$1")" && printf '{"server": "https://s", "user": "carol"}' > "$1""#, "sh", file]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)

        let carol = UbiquityIdentityToken(server: "https://s", user: "carol")
        #expect(await containersEventually { streamed.all.contains(carol) })
        #expect(monitor.token == carol)
    }

    @Test func streamsFinishWhenTheMonitorIsReleased() async throws {
        let finished = ContainersRecorder<Bool>()
        let consumer: Task<Void, Never>
        do {
            let monitor = UbiquityIdentityMonitor(paths: sandbox.paths, notificationCenter: NotificationCenter(),
                                                  interval: .milliseconds(50))
            let stream = monitor.changes()
            consumer = Task {
                for await _ in stream {}
                finished.append(true)
            }
        }
        defer { consumer.cancel() }
        #expect(await containersEventually { !finished.all.isEmpty })
    }

    @Test func fileManagerTokenReadsTheProcessAccountFile() {
        // The process's own account file: only compare, never write it.
        #expect(FileManager.default.ubiquityIdentityToken == UbiquityAccountFile().identityToken)
        #expect(UbiquityIdentityMonitor.shared.accountFile == UbiquityAccountFile(paths: UbiquityPaths()))
    }

    @Test func notificationNameIsApples() {
        #expect(Notification.Name.NSUbiquityIdentityDidChange.rawValue == "NSUbiquityIdentityDidChangeNotification")
        #expect(NSNotification.Name.NSUbiquityIdentityDidChange == Notification.Name("NSUbiquityIdentityDidChangeNotification"))
    }
}
