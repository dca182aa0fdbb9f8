// SPDX-License-Identifier: Apache-2.0

/// How `ubiq serve` listens and what it accepts.
public struct RecordsServerConfiguration: Sendable {
    /// The address to bind (`127.0.0.1` by default: loopback only).
    public var host: String
    /// The port; 0 picks a free one.
    public var port: Int
    /// PEM certificate chain and private key files for HTTPS; nil serves plain HTTP.
    public var tlsCertificatePath: String?
    public var tlsKeyPath: String?
    /// The largest request body accepted, in bytes.
    public var maximumBodySize: Int
    /// The URL clients reach the server at, for sign-in redirects (`https://cloud.example.org`);
    /// nil derives it from the request's `Host` header.
    public var publicURL: String?
    /// Lifetime of a web-auth token from the sign-in page, in seconds (30 minutes, as CloudKit).
    public var webAuthTokenLifetime: Int64
    /// Lifetime with "keep me signed in", of admin-issued tokens and of rotated tokens (2 weeks).
    public var longWebAuthTokenLifetime: Int64
    /// Accepted clock skew of server-to-server signatures, in seconds.
    public var signatureSkew: Double

    /// Makes a configuration.
    public init(host: String = "127.0.0.1", port: Int = 0, tlsCertificatePath: String? = nil, tlsKeyPath: String? = nil,
                maximumBodySize: Int = 32 << 20, publicURL: String? = nil, webAuthTokenLifetime: Int64 = 30 * 60,
                longWebAuthTokenLifetime: Int64 = 14 * 24 * 3600, signatureSkew: Double = 600) {
        self.host = host
        self.port = port
        self.tlsCertificatePath = tlsCertificatePath
        self.tlsKeyPath = tlsKeyPath
        self.maximumBodySize = maximumBodySize
        self.publicURL = publicURL
        self.webAuthTokenLifetime = webAuthTokenLifetime
        self.longWebAuthTokenLifetime = longWebAuthTokenLifetime
        self.signatureSkew = signatureSkew
    }
}
