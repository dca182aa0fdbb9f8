// SPDX-License-Identifier: Apache-2.0
// `import UbiquityCloudKit` is enough: the core vocabulary (UbiquityError, UbiquityPaths,
// UbiquityAccountFile) and the JSON values notifications carry come with it.
@_exported import UbiquityCore
@_exported import UbiquityWire
