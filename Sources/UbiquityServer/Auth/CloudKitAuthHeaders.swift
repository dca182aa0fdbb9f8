// SPDX-License-Identifier: Apache-2.0
import HTTPTypes

/// The names of the HTTP headers and query parameters CloudKit Web Services uses for
/// authentication and request bookkeeping.
///
/// A request authenticates either with an API token (`ckAPIToken`, optionally with
/// `ckWebAuthToken`) in the query string, or with a server-to-server signature in the three
/// `X-Apple-CloudKit-Request-*` headers; never both.
package enum CloudKitAuthHeaders {
    /// `X-Apple-CloudKit-Request-KeyID`: the ID of the server-to-server key that signed the request.
    package static let keyID = "X-Apple-CloudKit-Request-KeyID"
    /// `X-Apple-CloudKit-Request-ISO8601Date`: the signing date, ISO 8601 in UTC (`2016-01-25T22:15:43Z`).
    package static let iso8601Date = "X-Apple-CloudKit-Request-ISO8601Date"
    /// `X-Apple-CloudKit-Request-SignatureV1`: base64 of the ECDSA P-256 signature of
    /// `date:base64(SHA-256(body)):path`.
    package static let signatureV1 = "X-Apple-CloudKit-Request-SignatureV1"

    /// `X-Apple-CloudKit-Web-Auth-Token` (response): the rotated web-auth token, sent on every
    /// authenticated response.
    package static let webAuthToken = "X-Apple-CloudKit-Web-Auth-Token"
    /// `X-Apple-Request-UUID` (response): the request's UUID, also in error bodies as `uuid`.
    package static let requestUUID = "X-Apple-Request-UUID"
    /// `X-Apple-CloudKit-Version` (response): the protocol version, `1.0`.
    package static let cloudKitVersion = "X-Apple-CloudKit-Version"
    /// The value Apple sends in `X-Apple-CloudKit-Version`.
    package static let cloudKitVersionValue = "1.0"

    /// `ckAPIToken`: the query parameter carrying the container's API token.
    package static let apiTokenQueryParameter = "ckAPIToken"
    /// `ckWebAuthToken`: the query parameter carrying the user's web-auth token (and the
    /// parameter added to the sign-in callback URL).
    package static let webAuthTokenQueryParameter = "ckWebAuthToken"
}

extension HTTPField.Name {
    /// `X-Apple-CloudKit-Request-KeyID` (``CloudKitAuthHeaders/keyID``).
    package static var cloudKitRequestKeyID: Self { Self(CloudKitAuthHeaders.keyID)! }
    /// `X-Apple-CloudKit-Request-ISO8601Date` (``CloudKitAuthHeaders/iso8601Date``).
    package static var cloudKitRequestISO8601Date: Self { Self(CloudKitAuthHeaders.iso8601Date)! }
    /// `X-Apple-CloudKit-Request-SignatureV1` (``CloudKitAuthHeaders/signatureV1``).
    package static var cloudKitRequestSignatureV1: Self { Self(CloudKitAuthHeaders.signatureV1)! }
    /// `X-Apple-CloudKit-Web-Auth-Token` (``CloudKitAuthHeaders/webAuthToken``).
    package static var cloudKitWebAuthToken: Self { Self(CloudKitAuthHeaders.webAuthToken)! }
    /// `X-Apple-Request-UUID` (``CloudKitAuthHeaders/requestUUID``).
    package static var appleRequestUUID: Self { Self(CloudKitAuthHeaders.requestUUID)! }
    /// `X-Apple-CloudKit-Version` (``CloudKitAuthHeaders/cloudKitVersion``).
    package static var cloudKitVersion: Self { Self(CloudKitAuthHeaders.cloudKitVersion)! }
}
