// SPDX-License-Identifier: Apache-2.0
import ArgumentParser

// PLACEHOLDER: replaced by its implementation.
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status")
    func run() throws { throw ExitCode.failure }
}
