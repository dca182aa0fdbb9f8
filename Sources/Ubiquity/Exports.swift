// SPDX-License-Identifier: Apache-2.0
// The Ubiquity library re-exports its core vocabulary (UbiquityError, ContainerIdentifier,
// UbiquityPaths, BackupExclusion) so that `import Ubiquity` is enough.
@_exported import UbiquityCore
