// SPDX-License-Identifier: Apache-2.0
import Foundation

extension Notification.Name {
    /// Apple's `NSUbiquityIdentityDidChangeNotification`: posted on `NotificationCenter.default`,
    /// with no object and no `userInfo`, when the signed-in account changes (sign in, sign out,
    /// switch). Re-read `FileManager.default.ubiquityIdentityToken` when it arrives.
    public static let NSUbiquityIdentityDidChange = Notification.Name("NSUbiquityIdentityDidChangeNotification")
}
