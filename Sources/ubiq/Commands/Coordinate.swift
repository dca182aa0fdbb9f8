// SPDX-License-Identifier: Apache-2.0
import ArgumentParser

// PLACEHOLDER: replaced by its implementation.
struct Coordinate: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "coordinate")
    func run() throws { throw ExitCode.failure }
}
