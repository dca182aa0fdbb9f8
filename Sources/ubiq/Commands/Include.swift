// SPDX-License-Identifier: Apache-2.0
import ArgumentParser

// PLACEHOLDER: replaced by its implementation.
struct Include: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "include")
    func run() throws { throw ExitCode.failure }
}
