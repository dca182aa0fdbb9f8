// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Logging
import UbiquityCore
import UbiquitySync

/// `ubiq hooks list|test EVENT`: the user's hooks and a way to try them.
struct HooksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hooks",
        abstract: "List the hooks the daemon runs on sync events, or run them with a sample event.",
        discussion: """
            A hook is an executable file in $XDG_CONFIG_HOME/ubiquity/hooks named after an event \
            (or any executable in a folder named EVENT.d). Events: \(HookEvent.allCases.map(\.rawValue).joined(separator: ", ")). \
            It gets the event as JSON on stdin and UBIQUITY_EVENT, UBIQUITY_PATH, \
            UBIQUITY_CONTAINER… in its environment; it may run 30 seconds (then its process group \
            is killed); failures are logged and never hold up sync.

            Examples:
              ubiq hooks list
              ubiq hooks test did-download --path notes.txt
            """,
        subcommands: [List.self, Test.self]
    )

    struct Options: ParsableArguments {
        @Option(help: "The hooks folder (default $XDG_CONFIG_HOME/ubiquity/hooks).")
        var directory: String?

        func runner(timeout: Double = 30) throws -> HookRunner {
            let folder = try directory.map { URL(fileURLWithPath: try CLI.absolutePath($0), isDirectory: true) } ?? HookRunner.defaultDirectory()
            return HookRunner(directory: folder, timeout: .milliseconds(Int64(timeout * 1000)), logger: Logger(label: "ubiq.hooks"))
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "Show each event's hooks, and files that will not run.",
            discussion: """
                JSON (--json): one {"event","hooks"} object per event.

                Examples:
                  ubiq hooks list
                  ubiq hooks list --json
                """)
        @OptionGroup var options: Options
        @Flag(help: "Print JSON lines.") var json = false

        func run() throws {
            let runner = try options.runner()
            for event in HookEvent.allCases {
                let hooks = runner.hooks(for: event).map(\.path)
                if json {
                    CLI.printLine("{\"event\":\(CLI.jsonString(event.rawValue)),\"hooks\":[\(hooks.map(CLI.jsonString).joined(separator: ","))]}")
                } else {
                    CLI.printLine("\(event.rawValue): \(hooks.isEmpty ? "(none)" : hooks.joined(separator: ", "))")
                }
            }
            for (file, reason) in runner.problems() {
                FileHandle.standardError.write(Data("ubiq hooks: \(file.path): \(reason)\n".utf8))
            }
            if !json, !FileManager.default.fileExists(atPath: runner.directory.path) {
                CLI.printLine("(no hooks folder: create \(runner.directory.path) and put executables named after events in it)")
            }
        }
    }

    struct Test: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "test",
            abstract: "Run EVENT's hooks now with a sample event; exit 1 when one fails.",
            discussion: "Examples:\n  ubiq hooks test conflict --path notes.txt")
        @OptionGroup var options: Options
        @Argument(help: "The event: \(HookEvent.allCases.map(\.rawValue).joined(separator: ", ")).") var event: String
        @Option(help: "The path the sample event names.") var path: String = "example.txt"
        @Option(help: "Seconds each hook may run.") var timeout: Double = 30
        @Flag(help: "Print JSON lines.") var json = false

        func validate() throws {
            guard HookEvent(rawValue: event) != nil else {
                throw ValidationError("EVENT \(event.debugDescription): expected one of \(HookEvent.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            guard timeout > 0, timeout.isFinite else { throw ValidationError("--timeout \(timeout): expected seconds > 0") }
        }

        func run() async throws {
            let kind = HookEvent(rawValue: event)!
            let runner = try options.runner(timeout: timeout)
            let hooks = runner.hooks(for: kind)
            guard !hooks.isEmpty else {
                CLI.printLine("no hooks for \(kind) in \(runner.directory.path)")
                return
            }
            var facts = ["path": path, "container": "iCloud.org.ubiquity.Drive", "test": "1"]
            switch kind {
            case .uploadFailed: facts["error"] = "a sample error"
            case .conflict: facts["version"] = "sample-version"
            case .accountChanged: facts["user"] = "sample"
            default: break
            }
            let results = await runner.run(HookInvocation(kind, facts: facts))
            for result in results {
                let outcome = result.failure.map { "could not run: \($0)" }
                    ?? (result.timedOut ? "killed after \(timeout) s" : "exit \(result.status ?? -1)")
                if json {
                    CLI.printLine(CLI.jsonObject([("hook", result.executable.path), ("succeeded", result.succeeded), ("outcome", outcome),
                                                  ("output", result.output)]))
                } else {
                    CLI.printLine("\(result.executable.path): \(outcome)")
                    if !result.output.isEmpty { CLI.printRaw(result.output.hasSuffix("\n") ? result.output : result.output + "\n") }
                }
            }
            if results.contains(where: { !$0.succeeded }) { throw ExitCode.failure }
        }
    }
}
