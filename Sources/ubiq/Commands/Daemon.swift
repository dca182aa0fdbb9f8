// SPDX-License-Identifier: Apache-2.0
import ArgumentParser

// PLACEHOLDER: replaced by its implementation.
struct Daemon: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "daemon")
    func run() throws { throw ExitCode.failure }
}
