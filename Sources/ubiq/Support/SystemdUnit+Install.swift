// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity

extension SystemdUnit {
    /// The folder of the user's units: `$XDG_CONFIG_HOME/systemd/user`.
    static func directory(paths: UbiquityPaths = UbiquityPaths()) -> URL {
        paths.configDirectory.deletingLastPathComponent().appendingPathComponent("systemd/user", isDirectory: true)
    }

    /// The running command's arguments after its subcommand, without the install flags.
    static func commandArguments(subcommand: String, _ arguments: [String] = CommandLine.arguments) -> [String] {
        let start = arguments.firstIndex(of: subcommand).map { $0 + 1 } ?? arguments.count
        let dropped: Set = ["--install-service", "--uninstall-service", "--no-start", "--json"]
        return arguments[start...].filter { !dropped.contains($0) }
    }

    /// Installs or removes the unit for `ubiq SUBCOMMAND` as `options` ask, printing what was done
    /// (JSON with `json`). A missing or unreachable systemd user manager is not an error: the unit
    /// is written and the commands to run are printed.
    func perform(_ options: ServiceInstallOptions, subcommand: String, json: Bool) throws {
        let folder = SystemdUnit.directory()
        let path = folder.appendingPathComponent(name).path
        var steps: [String] = []
        var manager: String?
        if options.installService {
            let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
            let text = render(executable: executable, arguments: [subcommand] + SystemdUnit.commandArguments(subcommand: subcommand),
                              directory: FileManager.default.currentDirectoryPath, environment: ProcessInfo.processInfo.environment)
            do {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                // 0600: the unit may carry UBIQUITY_* variables with tokens
                _ = try SafeSave.write(Data((text + "\n").utf8), to: path, permissions: 0o600)
            } catch {
                throw UbiquityError(.io, "cannot write the unit \(path)", underlying: error)
            }
            steps.append("wrote \(path)")
            let commands = [["daemon-reload"], ["enable"] + (options.noStart ? [] : ["--now"]) + [name]]
            manager = SystemdUnit.systemctl(commands)
            if manager == nil { steps.append(options.noStart ? "enabled \(name)" : "enabled and started \(name)") }
        } else {
            manager = SystemdUnit.systemctl([["disable", "--now", name]])
            if FileManager.default.fileExists(atPath: path) {
                do { try FileManager.default.removeItem(atPath: path) } catch {
                    throw UbiquityError(.io, "cannot remove the unit \(path)", underlying: error)
                }
                steps.append("removed \(path)")
            } else {
                steps.append("no unit at \(path)")
            }
            _ = SystemdUnit.systemctl([["daemon-reload"]])
        }
        let todo = options.installService
            ? "systemctl --user daemon-reload && systemctl --user enable \(options.noStart ? "" : "--now ")\(name)"
            : "systemctl --user disable --now \(name)"
        if json {
            CLI.printLine(CLI.jsonObject([("unit", path), ("installed", options.installService), ("systemd", manager == nil),
                                          ("note", manager.map { "systemd's user manager is not reachable (\($0)); run: \(todo)" })]))
            return
        }
        for step in steps { CLI.printLine(step) }
        if let manager {
            CLI.printLine("systemd's user manager is not reachable here (\(manager)); in your login session run:\n  \(todo)")
        } else if options.installService {
            CLI.printLine("see it with: systemctl --user status \(name); journalctl --user -u \(name)")
        }
    }

    /// Runs `systemctl --user` with each argument list in turn; nil when all succeeded, else why not.
    static func systemctl(_ runs: [[String]]) -> String? {
        for arguments in runs {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["systemctl", "--user"] + arguments
            let errors = Pipe()
            process.standardError = errors
            process.standardOutput = FileHandle.nullDevice
            process.standardInput = FileHandle.nullDevice
            do { try process.run() } catch { return "systemctl cannot be run: \(error)" }
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            if process.terminationStatus != 0 {
                let line = message.split(separator: "\n").first.map(String.init) ?? "exit status \(process.terminationStatus)"
                return process.terminationStatus == 127 ? "systemctl is not installed" : line
            }
        }
        return nil
    }
}
