// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Testing
@testable import Ubiquity

@Suite("Document")
struct DocumentTests {
    @Test("open loads the file; save writes it back; close saves nothing more")
    func roundTrip() async throws {
        let box = try DocumentSandbox()
        try await box.run {
            let url = try box.file("note.txt", "hello")
            let document = NoteDocument(fileURL: url)
            document.autosaveInterval = .zero
            #expect(document.documentState == .closed)
            #expect(document.fileModificationDate == nil)
            #expect(document.localizedName == "note")
            #expect(document.fileType == "txt")

            #expect(await document.open())
            #expect(document.text == "hello")
            #expect(document.documentState == .normal)
            #expect(document.fileModificationDate != nil)
            #expect(!document.hasUnsavedChanges)

            document.edit("world")
            #expect(document.hasUnsavedChanges)
            #expect(await document.save(to: url, for: .forOverwriting))
            #expect(documentFileText(url) == "world")
            #expect(!document.hasUnsavedChanges)

            #expect(await document.close())
            #expect(document.documentState.contains(.closed))
            #expect(documentFileText(url) == "world")
        }
    }

    @Test("completion handlers report on the document's completion queue")
    func completionHandlers() async throws {
        let box = try DocumentSandbox()
        try await box.run {
            let url = try box.file("note.txt", "hello")
            let document = NoteDocument(fileURL: url)
            let opened: Bool = await withCheckedContinuation { continuation in
                document.open { continuation.resume(returning: $0) }
            }
            #expect(opened)
            let missing = NoteDocument(fileURL: try box.file("missing.txt"))
            #expect(await missing.open() == false)
            #expect(missing.documentState.contains(.closed))
            #expect((missing.lastError as? UbiquityError)?.code == .notFound)
            await document.close()
        }
    }

    @Test("saving for creating makes the file and opens the document, but refuses an existing file")
    func forCreating() async throws {
        let box = try DocumentSandbox()
        try await box.run {
            let fresh = NoteDocument(fileURL: try box.file("new.txt"))
            fresh.edit("first")
            #expect(await fresh.save(to: fresh.fileURL, for: .forCreating))
            #expect(documentFileText(fresh.fileURL) == "first")
            #expect(fresh.documentState == .normal)
            #expect(FileCoordinator.filePresenters.contains { $0 === fresh })
            await fresh.close()

            let existing = try box.file("old.txt", "keep me")
            let other = NoteDocument(fileURL: existing)
            other.edit("clobber")
            #expect(await other.save(to: existing, for: .forCreating) == false)
            #expect(documentFileText(existing) == "keep me")
            #expect((other.lastError as? UbiquityError)?.code == .alreadyExists)
            #expect(other.documentState.contains(.savingError))
        }
    }

    @Test("the change count: done, undone, cleared; a change made during a save keeps the document dirty")
    func changeCount() async throws {
        let box = try DocumentSandbox()
        try await box.run {
            let url = try box.file("note.txt", "a")
            let document = NoteDocument(fileURL: url)
            document.autosaveInterval = .zero
            #expect(await document.open())
            document.updateChangeCount(.done)
            document.updateChangeCount(.undone)
            #expect(!document.hasUnsavedChanges)
            document.updateChangeCount(.done)
            document.updateChangeCount(.cleared)
            #expect(!document.hasUnsavedChanges)

            document.edit("b")
            document.duringNextSnapshot { [document] in document.edit("c") }
            #expect(await document.save(to: url, for: .forOverwriting))
            #expect(documentFileText(url) == "b")
            #expect(document.hasUnsavedChanges)
            #expect(await document.autosave())
            #expect(documentFileText(url) == "c")
            #expect(!document.hasUnsavedChanges)
            await document.close()
        }
    }

    @Test("a change is saved by itself once the autosave interval has passed")
    func autosaveAfterInterval() async throws {
        let box = try DocumentSandbox()
        try await box.run {
            let url = try box.file("note.txt", "before")
            let document = NoteDocument(fileURL: url)
            document.autosaveInterval = .milliseconds(100)
            #expect(await document.open())
            document.edit("after")
            #expect(await documentEventually { documentFileText(url) == "after" })
            #expect(await documentEventually { !document.hasUnsavedChanges })
            await document.close()
        }
    }

    @Test("a coordinated write by another coordinator makes the open document reload")
    func revertsAfterExternalWrite() async throws {
        let box = try DocumentSandbox()
        try await box.run {
            let url = try box.file("note.txt", "mine")
            let document = NoteDocument(fileURL: url)
            #expect(await document.open())
            try FileCoordinator().coordinate(writingItemAt: url) { url in
                try SafeSave.write(Data("theirs".utf8), to: url.path)
            }
            #expect(await documentEventually { document.text == "theirs" })
            #expect(await document.autosave())  // nothing to save: waits for the revert to finish
            #expect(document.loads == 2)  // didChange and the reacquirer both ask: one reload
            #expect(document.events == ["disableEditing", "enableEditing"])
            #expect(!document.hasUnsavedChanges)
            #expect(document.documentState == .normal)
            await document.close()
        }
    }

    @Test("two documents on one file: a save by one reloads the other")
    func twoDocuments() async throws {
        let box = try DocumentSandbox()
        try await box.run {
            let url = try box.file("note.txt", "one")
            let first = NoteDocument(fileURL: url), second = NoteDocument(fileURL: url)
            first.autosaveInterval = .zero
            #expect(await first.open())
            #expect(await second.open())
            first.edit("two")
            #expect(await first.save(to: url, for: .forOverwriting))
            #expect(await documentEventually { second.text == "two" })
            #expect(first.loads == 1)  // never messaged about its own save
            await first.close()
            await second.close()
        }
    }

    @Test("a coordinated read makes a dirty document save first: the reader sees the new text")
    func saveBeforeRead() async throws {
        let box = try DocumentSandbox()
        try await box.run {
            let url = try box.file("note.txt", "old")
            let document = NoteDocument(fileURL: url)
            document.autosaveInterval = .zero
            #expect(await document.open())
            document.edit("new")
            let seen = try await FileCoordinator().coordinate(readingItemAt: url) { (url: URL) async throws -> String in
                try String(decoding: Data(contentsOf: url), as: UTF8.self)
            }
            #expect(seen == "new")
            #expect(!document.hasUnsavedChanges)
            let unchanged = try FileCoordinator().coordinate(readingItemAt: url, options: .withoutChanges) { url in
                try String(decoding: Data(contentsOf: url), as: UTF8.self)
            }
            #expect(unchanged == "new")
            await document.close()
        }
    }

    @Test("unsaved edits and an outside write: the edits stay, the outside content becomes a conflict version")
    func conflict() async throws {
        let box = try DocumentSandbox()
        try await box.run {
            let url = try box.file("note.txt", "base")
            let document = NoteDocument(fileURL: url)
            document.autosaveInterval = .zero
            let recorder = DocumentNotificationRecorder(document)
            defer { recorder.stop() }
            #expect(await document.open())
            document.edit("mine")
            try FileCoordinator().coordinate(writingItemAt: url) { url in
                try SafeSave.write(Data("theirs".utf8), to: url.path)
            }
            #expect(await documentEventually { document.documentState.contains(.inConflict) })
            #expect(document.text == "mine")
            #expect(document.hasUnsavedChanges)
            let conflicts = FileVersion.unresolvedConflictVersionsOfItem(at: url) ?? []
            #expect(conflicts.count == 1)
            #expect(conflicts.first.flatMap { documentFileText($0.url) } == "theirs")

            #expect(await document.save(to: url, for: .forOverwriting))
            #expect(documentFileText(url) == "mine")
            #expect(FileVersion.unresolvedConflictVersionsOfItem(at: url)?.count == 1)  // still kept
            #expect(recorder.received.contains { $0.contains(.inConflict) })

            for version in conflicts { try version.markResolved() }
            #expect(await documentEventually { !document.documentState.contains(.inConflict) })
            await document.close()
        }
    }

    @Test("an outside change not yet noticed is kept as a conflict version before a save replaces it")
    func unnoticedChangeIsKept() async throws {
        let box = try DocumentSandbox()
        try await box.run {
            let url = try box.file("note.txt", "base")
            let document = NoteDocument(fileURL: url)
            document.autosaveInterval = .zero
            #expect(await document.open())
            document.edit("mine")
            try Data("written without coordination".utf8).write(to: url)  // no presenter hears of it
            #expect(await document.save(to: url, for: .forOverwriting))
            #expect(documentFileText(url) == "mine")
            #expect(document.documentState.contains(.inConflict))
            let conflicts = FileVersion.unresolvedConflictVersionsOfItem(at: url) ?? []
            #expect(conflicts.compactMap { documentFileText($0.url) } == ["written without coordination"])
            await document.close()
        }
    }

    @Test("presentedItemDidChange for an uncoordinated write reloads once, however often it comes")
    func uncoordinatedChange() async throws {
        let box = try DocumentSandbox()
        try await box.run {
            let url = try box.file("note.txt", "one")
            let document = NoteDocument(fileURL: url)
            #expect(await document.open())
            try Data("two".utf8).write(to: url)
            for _ in 0..<5 { document.presentedItemDidChange() }
            #expect(await documentEventually { document.text == "two" })
            document.presentedItemDidChange()
            #expect(await document.autosave())  // drains the file-access queue
            try await Task.sleep(for: .milliseconds(100))
            #expect(await document.autosave())
            #expect(document.loads == 2)
            await document.close()
        }
    }

    @Test("state changes are posted as notifications and streamed")
    func stateNotifications() async throws {
        let box = try DocumentSandbox()
        try await box.run {
            let url = try box.file("note.txt", "x")
            let document = NoteDocument(fileURL: url)
            let recorder = DocumentNotificationRecorder(document)
            defer { recorder.stop() }
            let stream = document.stateChanges
            #expect(await document.open())
            #expect(await document.revert(toContentsOf: url))
            #expect(await document.close())
            var streamed: [Document.State] = []
            for await state in stream {
                streamed.append(state)
                if state.contains(.closed) { break }
            }
            let expected: [Document.State] = [.normal, .editingDisabled, .normal, .closed]
            #expect(streamed == expected)
            #expect(await documentEventually { recorder.received == expected })
        }
    }

    @Test("close unregisters the presenter; reopening registers it again")
    func closeUnregisters() async throws {
        let box = try DocumentSandbox()
        try await box.run {
            let url = try box.file("note.txt", "x")
            let document = NoteDocument(fileURL: url)
            #expect(await document.open())
            #expect(FileCoordinator.filePresenters.contains { $0 === document })
            #expect(await document.close())
            #expect(!FileCoordinator.filePresenters.contains { $0 === document })
            try FileCoordinator().coordinate(writingItemAt: url) { url in try Data("y".utf8).write(to: url) }
            #expect(document.loads == 1)  // closed: not told, not reloaded
            #expect(await document.open())
            #expect(document.text == "y")
            #expect(FileCoordinator.filePresenters.contains { $0 === document })
            await document.close()
        }
    }

    @Test("revert discards unsaved changes, with editing disabled around the read")
    func revert() async throws {
        let box = try DocumentSandbox()
        try await box.run {
            let url = try box.file("note.txt", "disk"), other = try box.file("other.txt", "elsewhere")
            let document = NoteDocument(fileURL: url)
            document.autosaveInterval = .zero
            #expect(await document.open())
            document.edit("unsaved")
            #expect(await document.revert(toContentsOf: url))
            #expect(document.text == "disk")
            #expect(!document.hasUnsavedChanges)
            #expect(document.events == ["disableEditing", "enableEditing"])
            #expect(await document.revert(toContentsOf: other))
            #expect(document.fileURL == other)
            #expect(document.text == "elsewhere")
            await document.close()
        }
    }

    @Test("the document follows a coordinated move and closes on a coordinated deletion")
    func moveAndDelete() async throws {
        let box = try DocumentSandbox()
        try await box.run {
            let url = try box.file("note.txt", "x"), moved = try box.file("renamed.txt")
            let document = NoteDocument(fileURL: url)
            document.autosaveInterval = .zero
            #expect(await document.open())
            let coordinator = FileCoordinator()
            try coordinator.coordinate(writingItemAt: url, options: .forMoving, writingItemAt: moved, options: .forReplacing) { from, to in
                try FileManager.default.moveItem(at: from, to: to)
                coordinator.item(at: from, didMoveTo: to)
            }
            #expect(await documentEventually { document.fileURL.path == moved.path })
            document.edit("edited after the move")
            #expect(await document.autosave())
            #expect(documentFileText(moved) == "edited after the move")

            document.edit("never saved")
            try FileCoordinator().coordinate(writingItemAt: moved, options: .forDeleting) { url in
                try FileManager.default.removeItem(at: url)
            }
            #expect(document.documentState.contains(.closed))
            #expect(!FileCoordinator.filePresenters.contains { $0 === document })
            #expect(!FileManager.default.fileExists(atPath: moved.path))
        }
    }

    @Test("a save is a safe-save: no temporary file left, the skip-backup attribute kept")
    func safeSave() async throws {
        let box = try DocumentSandbox()
        try await box.run {
            let url = try box.file("note.txt", "x")
            try BackupExclusion.setExcluded(true, url.path)
            let before = FileStamp.of(url.path)
            let document = NoteDocument(fileURL: url)
            document.autosaveInterval = .zero
            #expect(await document.open())
            document.edit("y")
            #expect(await document.save(to: url, for: .forOverwriting))
            #expect(documentFileText(url) == "y")
            #expect(FileStamp.of(url.path)?.inode != before?.inode)  // replaced by rename, not rewritten
            #expect(try BackupExclusion.isExcluded(url.path))
            let names = try FileManager.default.contentsOfDirectory(atPath: box.root.path)
            #expect(!names.contains { $0.hasPrefix(SafeSave.temporaryPrefix) })
            await document.close()
        }
    }
}
