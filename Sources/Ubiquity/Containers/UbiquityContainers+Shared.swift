// SPDX-License-Identifier: Apache-2.0
import Foundation

extension UbiquityContainers {
    /// The process-wide containers: those declared with ``declare(_:)`` (in call order), then
    /// those in `UBIQUITY_CONTAINERS` (read once, on first use; invalid entries are skipped and
    /// named in lookup errors), kept under the process's XDG paths.
    /// `FileManager.url(forUbiquityContainerIdentifier:)` uses it.
    public static var shared: UbiquityContainers { ContainerDeclarations.process.containers }

    /// Declares containers for ``shared``, like the ubiquity-container-identifiers entitlement:
    /// call it early, before the first lookup. The first identifier declared in code is the
    /// default. Validates every identifier first (`invalidArgument`) and declares none on error;
    /// identifiers already declared are ignored.
    public static func declare(_ identifiers: [String]) throws {
        try ContainerDeclarations.process.declare(identifiers)
    }
}
