// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Testing
import Ubiquity

@Suite("FileVersion: conflicts and resolution")
struct FileVersionConflictTests {
    @Test func aConflictVersionIsUnresolvedUntilMarked() throws {
        let sandbox = try VersionSandbox()
        let url = try sandbox.write("mine", to: "a.txt")
        let theirs = try sandbox.write("theirs", to: "incoming/a.txt")
        let date = Date(timeIntervalSince1970: 1_700_000_000)
        try sandbox.run {
            let conflict = try FileVersion.addConflictVersion(ofItemAt: url, withContentsOf: theirs,
                                                              savingComputerName: "Ann's laptop", modificationDate: date)
            #expect(conflict.isConflict && !conflict.isResolved && !conflict.isDiscardable)
            #expect(conflict.localizedNameOfSavingComputer == "Ann's laptop")
            #expect(conflict.modificationDate == date)
            #expect(sandbox.read(conflict.url) == "theirs")
            #expect(FileVersion.unresolvedConflictVersionsOfItem(at: url) == [conflict])

            conflict.isResolved = false  // ignored (Apple raises)
            #expect(!conflict.isResolved)
            conflict.isResolved = true
            #expect(conflict.isResolved)
            #expect(FileVersion.unresolvedConflictVersionsOfItem(at: url) == [])
            // Persisted: a fresh lookup sees it resolved, and the version is still stored.
            let again = try #require(FileVersion.version(itemAt: url, forPersistentIdentifier: conflict.persistentIdentifier))
            #expect(again.isConflict && again.isResolved)
            #expect(FileVersion.otherVersionsOfItem(at: url) == [conflict])
            try again.markResolved()  // idempotent
        }
    }

    @Test func theDefaultSavingComputerIsThisDevice() throws {
        let sandbox = try VersionSandbox()
        let url = try sandbox.write("x", to: "a.txt")
        try sandbox.run {
            let conflict = try FileVersion.addConflictVersion(ofItemAt: url, withContentsOf: url)
            let name = try #require(conflict.localizedNameOfSavingComputer)
            let expected = ProcessInfo.processInfo.environment["UBIQUITY_DEVICE_NAME"].flatMap { $0.isEmpty ? nil : $0 }
            if let expected { #expect(name == expected) } else { #expect(!name.isEmpty) }
        }
    }

    @Test func versionsThatAreNotConflictsAreAlwaysResolved() throws {
        let sandbox = try VersionSandbox()
        let url = try sandbox.write("x", to: "a.txt")
        try sandbox.run {
            let version = try FileVersion.addOfItem(at: url, withContentsOf: url)
            #expect(version.isResolved)
            try version.markResolved()
            try #require(FileVersion.currentVersionOfItem(at: url)).markResolved()
        }
    }

    @Test func applesDocumentedOrderWorks() throws {
        // Replace with the winner, remove the other versions, then mark the conflicts resolved.
        let sandbox = try VersionSandbox()
        let url = try sandbox.write("mine", to: "a.txt")
        let theirs = try sandbox.write("theirs", to: "incoming/a.txt")
        try sandbox.run {
            _ = try FileVersion.addConflictVersion(ofItemAt: url, withContentsOf: theirs)
            let conflicts = try #require(FileVersion.unresolvedConflictVersionsOfItem(at: url))
            try #require(conflicts.first).replaceItem(at: url)
            try FileVersion.removeOtherVersionsOfItem(at: url)
            for conflict in conflicts { conflict.isResolved = true; try conflict.markResolved() }
            #expect(conflicts.allSatisfy { $0.isResolved })
            #expect(sandbox.read(url) == "theirs")
            #expect(FileVersion.otherVersionsOfItem(at: url) == [])
            // A removed version can still be looked up (for presenters told of the loss).
            let removed = try #require(FileVersion.version(itemAt: url, forPersistentIdentifier: conflicts[0].persistentIdentifier))
            #expect(!removed.hasLocalContents && removed.isResolved)
        }
    }

    @Test func presentersHearOfGainedResolvedAndLostVersions() async throws {
        let sandbox = try VersionSandbox()
        let url = try sandbox.write("mine", to: "a.txt")
        let presenter = VersionRecordingPresenter(url: url)
        FileCoordinator.addFilePresenter(presenter)
        defer { FileCoordinator.removeFilePresenter(presenter) }
        let id = try sandbox.run { () throws -> String in
            try FileCoordinator().coordinate(writingItemAt: url) { url in
                let conflict = try FileVersion.addConflictVersion(ofItemAt: url, withContentsOf: url)
                try conflict.markResolved()
                try conflict.remove()
                return conflict.persistentIdentifier
            }
        }
        let expected = ["gained " + id, "resolved " + id, "lost " + id]
        for _ in 0..<200 where presenter.events.count < expected.count {
            try await Task.sleep(for: .milliseconds(25))
        }
        #expect(presenter.events == expected)
    }
}

/// Records the version messages it receives.
final class VersionRecordingPresenter: FilePresenter {
    let presentedItemURL: URL?
    let presentedItemOperationQueue: OperationQueue
    private let log = Mutex<[String]>([])

    init(url: URL) {
        presentedItemURL = url
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        presentedItemOperationQueue = queue
    }

    var events: [String] { log.withLock { $0 } }

    func presentedItemDidGain(_ version: FileVersion) { log.withLock { $0.append("gained " + version.persistentIdentifier) } }
    func presentedItemDidLose(_ version: FileVersion) { log.withLock { $0.append("lost " + version.persistentIdentifier) } }
    func presentedItemDidResolveConflict(_ version: FileVersion) { log.withLock { $0.append("resolved " + version.persistentIdentifier) } }
}
