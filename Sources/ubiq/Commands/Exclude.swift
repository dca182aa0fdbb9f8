// SPDX-License-Identifier: Apache-2.0
import ArgumentParser

// PLACEHOLDER: replaced by its implementation.
struct Exclude: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "exclude")
    func run() throws { throw ExitCode.failure }
}
