// SPDX-License-Identifier: Apache-2.0
import ArgumentParser

// PLACEHOLDER: replaced by its implementation.
struct ContainerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "container")
    func run() throws { throw ExitCode.failure }
}
