// SPDX-License-Identifier: Apache-2.0
import ArgumentParser

// PLACEHOLDER: replaced by its implementation.
struct Versions: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "versions")
    func run() throws { throw ExitCode.failure }
}
