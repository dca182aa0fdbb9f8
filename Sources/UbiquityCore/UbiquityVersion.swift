// SPDX-License-Identifier: Apache-2.0

/// The version of this build of Ubiquity (`ubiq --version`). One number for the libraries, the
/// daemon and the server; the wire protocols carry their own versions (the control protocol's, for one).
public enum UbiquityVersion {
    /// The version, `MAJOR.MINOR.PATCH` (semantic versioning; the minor number counts the
    /// capabilities landed while the major is 0).
    public static let current = "0.24.0"
}
