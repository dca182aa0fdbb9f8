// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Ubiquity

/// The document of Apple's iCloudUIDoc sample: one line of text, stored as UTF-8.
///
/// `@unchecked Sendable` as its superclass: its own state is behind a Mutex.
final class MonkeyDocument: Document, @unchecked Sendable {
    private struct Record {
        var text = ""
        var started = false
    }
    private let record = Mutex(Record())

    /// The text field's value.
    var text: String { record.withLock { $0.text } }

    /// Sets the text and counts the change, so that autosave picks it up.
    func setText(_ text: String) {
        record.withLock { $0.text = text }
        updateChangeCount(.done)
    }

    /// The document is open and shown: from now on, print `saved` after each successful save
    /// (autosaves included) and `reloaded: TEXT` after each load.
    func didStart() {
        record.withLock { $0.started = true }
    }

    /// Takes the file's text (one trailing line break dropped, as a text field would). Once the
    /// document is open, every load is a reload caused by a change made elsewhere, and is printed.
    override func load(fromContents contents: Any, ofType typeName: String?) throws {
        guard let data = contents as? Data else {
            throw UbiquityError(.invalidArgument, "MonkeyDocument reads flat files only")
        }
        var text = String(decoding: data, as: UTF8.self)
        if text.hasSuffix("\r\n") { text.removeLast(2) } else if text.hasSuffix("\n") { text.removeLast() }
        let reloaded = record.withLock { record in
            record.text = text
            return record.started
        }
        if reloaded { Output.line("reloaded: " + Output.escaped(text)) }
    }

    /// The text as UTF-8.
    override func contents(forType typeName: String) throws -> Any {
        Data(text.utf8)
    }

    /// Saves as `Document` does, then prints `saved` (once the document is open).
    override func save(to url: URL, for saveOperation: SaveOperation, completionHandler: (@Sendable (Bool) -> Void)?) {
        super.save(to: url, for: saveOperation) { [weak self] success in
            if success {
                if self?.record.withLock({ $0.started }) == true { Output.line("saved") }
            } else {
                Output.error("save failed: \(self?.lastError.map { "\($0)" } ?? "unknown error")")
            }
            completionHandler?(success)
        }
    }
}
