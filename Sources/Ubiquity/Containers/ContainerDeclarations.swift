// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization

/// The containers a process declares: those declared in code, in call order, then those of
/// `UBIQUITY_CONTAINERS` (invalid entries skipped and remembered for error messages). Backs
/// ``UbiquityContainers/shared``; tests make their own.
package final class ContainerDeclarations: Sendable {
    /// The declarations of this process, read from its environment on first use.
    package static let process = ContainerDeclarations(environment: ProcessInfo.processInfo.environment)

    private let declaredInCode = Mutex<[ContainerIdentifier]>([])
    private let paths: UbiquityPaths
    private let fromEnvironment: [ContainerIdentifier]
    private let ignoredEntries: [String]

    /// Declarations whose paths and `UBIQUITY_CONTAINERS` come from `environment`.
    package init(environment: [String: String]) {
        let parsed = UbiquityContainers.parseDeclarations(environment[UbiquityContainers.environmentVariable] ?? "")
        paths = UbiquityPaths(environment: environment)
        fromEnvironment = parsed.valid
        ignoredEntries = parsed.invalid.map(\.entry)
    }

    /// Adds containers after those already declared in code; validates all first and adds none
    /// on error (`invalidArgument`).
    package func declare(_ identifiers: [String]) throws {
        let parsed = try identifiers.map(ContainerIdentifier.init)
        declaredInCode.withLock { declared in
            for identifier in parsed where !declared.contains(identifier) { declared.append(identifier) }
        }
    }

    /// The containers declared so far.
    package var containers: UbiquityContainers {
        UbiquityContainers(paths: paths, identifiers: declaredInCode.withLock { $0 } + fromEnvironment,
                           ignoredEntries: ignoredEntries)
    }
}
