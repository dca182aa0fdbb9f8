// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
import UbiquityCore

/// `ubiq … --help` for every command.
@Suite("CLI help")
struct CLIHelpTests {
    /// Every command path (space-separated), the top level as "".
    static let commands = [
        "", "ls", "cat", "put", "get", "mv", "rm", "mkdir", "daemon", "present", "coordinate", "container", "container url", "container list",
        "versions", "resolve", "exclude", "include", "status", "evict", "download", "pin", "unpin", "query", "index", "index status",
        "index scan", "index rescan",
        "records", "records save", "records fetch", "records delete", "records query", "records zones",
        "records zones list", "records zones create", "records zones delete", "records changes",
        "kv", "kv get", "kv set", "kv remove", "kv list", "kv watch",
        "serve", "admin", "admin container", "admin container add", "admin container list", "admin user", "admin user add",
        "admin user token", "admin key", "admin key add",
        "admin schema", "admin schema show", "admin schema export", "admin schema import", "admin schema deploy", "admin schema reset",
        "admin schema index", "admin role", "admin role add", "admin role grant", "admin role revoke", "admin role set", "admin role show",
        "admin user set", "admin gc", "account", "account login", "account logout", "account status", "hooks", "hooks list",
        "hooks test", "doctor",
    ]


    /// Whether `help` shows an example: "Example", "e.g.", or an invocation of the command with a
    /// concrete argument (`ubiq versions notes.txt`) outside the USAGE line; placeholders such as
    /// `<path>`, `[--json]` or `PATH` do not count.
    static func hasExample(_ help: String, command: String) -> Bool {
        if help.contains("Example") || help.contains("e.g.") { return true }
        let invocation = "ubiq \(command) "
        for line in help.split(separator: "\n") where !line.hasPrefix("USAGE:") {
            var rest = Substring(line)
            while let range = rest.range(of: invocation) {
                rest = rest[range.upperBound...]
                let word = rest.prefix { $0 != " " && $0 != "`" && $0 != "'" }
                let placeholder = word.isEmpty || "<[-".contains(word.first!)
                    || word.allSatisfy { $0.isUppercase || $0 == "-" || $0 == "|" || $0 == "_" }
                if !placeholder { return true }
            }
        }
        return false
    }

    @Test("--help exits 0 with a usage line and shows examples", arguments: commands)
    func help(_ command: String) throws {
        let device = Device()
        let words = command.split(separator: " ").map(String.init)
        let run = try device.run(words + ["--help"])
        #expect(run.status == 0, "\(run)")
        #expect(!run.stdout.isEmpty, "\(run)")
        #expect(run.stdout.contains("USAGE: ubiq" + (command.isEmpty ? "" : " " + command)), "\(run)")
        #expect(Self.hasExample(run.stdout, command: command.split(separator: " ").first.map(String.init) ?? ""), "\(run)")
        #expect(run.stdout.contains("Examples:"), "every command's help has an Examples: section: \(run)")
    }

    @Test("--version prints the version and exits 0")
    func version() throws {
        let run = try Device().run(["--version"])
        #expect(run.status == 0, "\(run)")
        #expect(run.stdout == "ubiq \(UbiquityVersion.current)\n", "\(run)")
    }

    @Test("the example detector finds examples and ignores usage placeholders")
    func detector() {
        #expect(Self.hasExample("Examples:\n  ubiq daemon", command: "daemon"))
        #expect(Self.hasExample("do this, e.g. that", command: "x"))
        #expect(Self.hasExample("Run `ubiq status notes.txt` to see it.", command: "status"))
        #expect(!Self.hasExample("USAGE: ubiq status <path> [--json]", command: "status"))
        #expect(!Self.hasExample("Use `ubiq resolve` to settle; `ubiq versions PATH` lists ids.", command: "resolve"))
        #expect(!Self.hasExample("`ubiq versions PATH` lists the ids", command: "versions"))
    }
}
