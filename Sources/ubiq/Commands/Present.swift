// SPDX-License-Identifier: Apache-2.0
import ArgumentParser

// PLACEHOLDER: replaced by its implementation.
struct Present: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "present")
    func run() throws { throw ExitCode.failure }
}
