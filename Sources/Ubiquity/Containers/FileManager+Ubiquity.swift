// SPDX-License-Identifier: Apache-2.0
import Foundation

extension FileManager {
    /// Apple's `url(forUbiquityContainerIdentifier:)`: the directory of a declared ubiquity
    /// container (`nil`: the first declared one), created on first use, or nil when the
    /// identifier is malformed or not declared. Uses ``UbiquityContainers/shared``; call
    /// ``UbiquityContainers/containerURL(for:)`` to learn why a lookup fails.
    public func url(forUbiquityContainerIdentifier containerIdentifier: String?) -> URL? {
        UbiquityContainers.shared.url(forUbiquityContainerIdentifier: containerIdentifier)
    }

    /// Apple's `ubiquityIdentityToken`: an opaque token for the signed-in account, nil when
    /// nobody is signed in. Fast (one `stat`); the first use starts watching the account file so
    /// that `NSUbiquityIdentityDidChange` is posted when another process signs in or out.
    public var ubiquityIdentityToken: UbiquityIdentityToken? {
        UbiquityIdentityMonitor.shared.token
    }
}
