// SPDX-License-Identifier: Apache-2.0
import ArgumentParser

// PLACEHOLDER: replaced by its implementation.
struct Resolve: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "resolve")
    func run() throws { throw ExitCode.failure }
}
