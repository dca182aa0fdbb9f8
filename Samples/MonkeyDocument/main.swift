// SPDX-License-Identifier: Apache-2.0
// MonkeyDocument: a port of Apple's iCloudUIDoc sample (one text field kept in
// `Documents/test.txt` of a ubiquity container), driven from standard input.
//
//   MonkeyDocument [--container ID | --file PATH] [--autosave-interval SECONDS]
//
// The file is the `test.txt` a metadata query finds in the container's documents
// (`--container`, or the first container of UBIQUITY_CONTAINERS), as in Apple's sample, else
// `Documents/test.txt` there; or PATH. It is created when missing. Commands, one per line on stdin:
//   set TEXT   change the text (saved by autosave, --autosave-interval later; default 1 s)
//   save       save now
//   show       print `text: TEXT`
//   quit       save unsaved changes, close and exit (end of input does the same)
// Printed on stdout, one line each: `loaded: TEXT` once the document is open, `reloaded: TEXT`
// whenever it reloads because the file changed elsewhere, `saved` after each save. Line breaks
// in TEXT are shown as `\n`. Errors go to stderr.
import Foundation
import Ubiquity

/// The command line.
struct Options {
    var container: String?
    var file: String?
    var autosaveInterval: Duration = .seconds(1)

    static let usage = """
        usage: MonkeyDocument [--container ID | --file PATH] [--autosave-interval SECONDS]
        commands on stdin: set TEXT | save | show | quit
        """

    init(_ arguments: [String]) throws {
        var rest = arguments[...]
        func value(of flag: String) throws -> String {
            guard let value = rest.popFirst() else { throw UbiquityError(.invalidArgument, "\(flag) needs a value") }
            return value
        }
        while let argument = rest.popFirst() {
            switch argument {
            case "--container": container = try value(of: argument)
            case "--file": file = try value(of: argument)
            case "--autosave-interval":
                let text = try value(of: argument)
                guard let seconds = Double(text), seconds >= 0, seconds.isFinite else {
                    throw UbiquityError(.invalidArgument, "--autosave-interval '\(text)' is not a number of seconds ≥ 0")
                }
                autosaveInterval = .milliseconds(Int64(seconds * 1000))
            case "--help", "-h":
                Output.line(Self.usage)
                exit(0)
            default:
                throw UbiquityError(.invalidArgument, "unknown argument '\(argument)'")
            }
        }
        if container != nil && file != nil {
            throw UbiquityError(.invalidArgument, "give --container or --file, not both")
        }
    }

    /// The document's file: PATH; or, as Apple's sample does, the `test.txt` a metadata query
    /// finds in the container's documents (in any folder), else `Documents/test.txt`.
    func documentURL() async throws -> URL {
        if let file {
            let url = URL(fileURLWithPath: file)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            return url
        }
        if let container { try UbiquityContainers.declare([container]) }
        // Apple's sample asks `url(forUbiquityContainerIdentifier:)`; ask for the reason on failure.
        guard let root = FileManager.default.url(forUbiquityContainerIdentifier: container) else {
            _ = try UbiquityContainers.shared.containerURL(for: container)
            throw UbiquityError(.unknownContainer, "no ubiquity container; use --container ID, UBIQUITY_CONTAINERS or --file PATH")
        }
        if let found = try await TestDocumentQuery.find() { return found }
        return root.appendingPathComponent("Documents/test.txt")
    }
}

let options: Options
let url: URL
do {
    options = try Options(Array(CommandLine.arguments.dropFirst()))
    url = try await options.documentURL()
} catch {
    Output.error("\(error)")
    Output.error(Options.usage)
    exit(64)
}

let document = MonkeyDocument(fileURL: url)
document.autosaveInterval = options.autosaveInterval
let ready: Bool
if FileManager.default.fileExists(atPath: url.path) {
    ready = await document.open()
} else {
    ready = await document.save(to: url, for: .forCreating)
}
guard ready else {
    Output.error("cannot open '\(url.path)': \(document.lastError.map { "\($0)" } ?? "unknown error")")
    exit(1)
}
document.didStart()
Output.line("loaded: " + Output.escaped(document.text))

while let line = readLine() {
    let command = line.prefix { $0 != " " }
    let argument = line.dropFirst(command.count).dropFirst()
    switch command {
    case "set":
        document.setText(String(argument))
    case "save":
        await document.save(to: document.fileURL, for: .forOverwriting)
    case "show":
        Output.line("text: " + Output.escaped(document.text))
    case "quit":
        await document.close()
        exit(0)
    case "":
        continue
    default:
        Output.error("unknown command '\(command)' (set TEXT | save | show | quit)")
    }
}
await document.close()
