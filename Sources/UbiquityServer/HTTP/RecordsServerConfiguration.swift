// SPDX-License-Identifier: Apache-2.0
import Foundation

/// How `ubiq serve` listens and what it accepts.
package struct RecordsServerConfiguration: Sendable {
    /// The address to bind (`127.0.0.1` by default: loopback only).
    package var host: String
    /// The port; 0 picks a free one.
    package var port: Int
    /// PEM certificate chain and private key files for HTTPS; nil serves plain HTTP.
    package var tlsCertificatePath: String?
    package var tlsKeyPath: String?
    /// The largest request body accepted, in bytes.
    package var maximumBodySize: Int
    /// The URL clients reach the server at, for sign-in redirects (`https://cloud.example.org`);
    /// nil derives it from the request's `Host` header.
    package var publicURL: String?
    /// Lifetime of a web-auth token from the sign-in page, in seconds (30 minutes, as CloudKit).
    package var webAuthTokenLifetime: Int64
    /// Lifetime with "keep me signed in", of admin-issued tokens and of rotated tokens (2 weeks).
    package var longWebAuthTokenLifetime: Int64
    /// Lifetime of device tokens (`ubiq account login`, `POST /auth/device`), in seconds (a
    /// year): they last until the device signs out.
    package var deviceTokenLifetime: Int64
    /// Accepted clock skew of server-to-server signatures, in seconds.
    package var signatureSkew: Double
    /// Requests per second each caller may make to the `/database/` endpoints (a token bucket per
    /// signed-in user, server-to-server key, or API token and client address); 0 disables limits.
    /// Over it: HTTP 429 `THROTTLED` with `retryAfter`.
    package var rateLimit: Double
    /// How many requests a caller may make at once before `rateLimit` applies (the bucket's size).
    package var rateLimitBurst: Int
    /// The `retryAfter` seconds of `TRY_AGAIN_LATER` (HTTP 503) when the store is unavailable.
    package var unavailableRetryAfter: Int
    /// Where asset content is kept (a folder or a bucket); nil: the server offers no assets
    /// (asset values are stored as given). `ubiq serve` sets it (`--data DIR` → `DIR/blobs`, or
    /// `--blobs DIR|s3://…`).
    package var blobs: BlobLocation?
    /// ``blobs`` when it is a folder; setting it makes ``blobs`` that folder (nil: none).
    package var blobsDirectory: String? {
        get { if case .folder(let path) = blobs { path } else { nil } }
        set { blobs = newValue.map(BlobLocation.folder) }
    }
    /// Limits of the asset endpoints.
    package var assets: AssetConfiguration
    /// Each user's private database may hold this many bytes (records' JSON and distinct
    /// assets); nil: unlimited. 5 GiB by default.
    package var privateQuotaBytes: Int64?
    /// Each container's public database (per environment) may hold this many bytes; nil:
    /// unlimited. 100 GiB by default.
    package var publicQuotaBytes: Int64?
    /// How often the server deletes asset content no record refers to, in seconds (6 hours by
    /// default); 0 never.
    package var assetGarbageCollectionInterval: Double
    /// Unreferenced content younger than this (in seconds; 48 hours by default) is kept, so
    /// uploads not saved in a record yet survive. At least the receipt lifetime (24 h).
    package var assetGarbageMinimumAge: Double
    /// On graceful shutdown, connections still open this many seconds after it began (a
    /// request whose client stopped sending halfway) are closed (30 by default).
    package var shutdownGracePeriod: Double
    /// The most bytes of request bodies held in memory at once, over all requests (256 MiB by
    /// default; 0: unlimited). A body that would go over it is refused unread with HTTP 503
    /// `TRY_AGAIN_LATER` (`retryAfter` 1). Each route's own cap (``maximumBodySize``, the asset
    /// limits) still applies; streamed asset uploads are not held in memory and not counted.
    package var maximumBodyBytesInFlight: Int
    /// Connections served at once (512 by default; 0: unlimited). One over it is answered
    /// HTTP 503 `TRY_AGAIN_LATER` with `Connection: close` and closed; the server stops
    /// accepting while an eighth more (at least 8) are open, so file descriptors never run out.
    /// Keep it well under the process's open-file limit (`ulimit -n`, systemd's `LimitNOFILE`).
    package var maximumConnections: Int
    /// Seconds a connection may stay idle — between requests, or in the middle of a request
    /// whose client stopped sending — before it is closed (60 by default; 0: never). A response
    /// being written (a download, a long-poll) is not idle. Hummingbird's HTTP/1 `idleTimeout`.
    package var idleTimeout: Double
    /// Seconds within which a request's head (request line and headers) must arrive whole,
    /// counted from the connection's start (TLS handshake included) or, on a kept-alive
    /// connection, from the next request's first byte (30 by default; 0: no limit).
    package var requestHeaderTimeout: Double
    /// The token `/metrics` asks for (`Authorization: Bearer TOKEN`); nil (the default): only
    /// clients on this machine (loopback) may read it.
    package var metricsToken: String? = nil
    /// How many days deleted documents stay in Recently Deleted (30 by default, as iCloud's;
    /// `ubiq serve --trash-days`). At least 1.
    package var trashDays: Int = 30

    /// The quotas of `privateQuotaBytes` and `publicQuotaBytes`.
    package var quotas: StorageQuotas { StorageQuotas(privateBytes: privateQuotaBytes, publicBytes: publicQuotaBytes) }

    /// Makes a configuration.
    package init(host: String = "127.0.0.1", port: Int = 0, tlsCertificatePath: String? = nil, tlsKeyPath: String? = nil,
                maximumBodySize: Int = 32 << 20, publicURL: String? = nil, webAuthTokenLifetime: Int64 = 30 * 60,
                longWebAuthTokenLifetime: Int64 = 14 * 24 * 3600, signatureSkew: Double = 600,
                rateLimit: Double = 100, rateLimitBurst: Int = 200, unavailableRetryAfter: Int = 5, blobsDirectory: String? = nil,
                assets: AssetConfiguration = AssetConfiguration(), privateQuotaBytes: Int64? = 5 << 30, publicQuotaBytes: Int64? = 100 << 30,
                assetGarbageCollectionInterval: Double = 6 * 3600, assetGarbageMinimumAge: Double = 48 * 3600,
                shutdownGracePeriod: Double = 30, deviceTokenLifetime: Int64 = 365 * 24 * 3600,
                maximumBodyBytesInFlight: Int = 256 << 20, maximumConnections: Int = 512, idleTimeout: Double = 60,
                requestHeaderTimeout: Double = 30) {
        self.maximumBodyBytesInFlight = maximumBodyBytesInFlight
        self.maximumConnections = maximumConnections
        self.idleTimeout = idleTimeout
        self.requestHeaderTimeout = requestHeaderTimeout
        self.deviceTokenLifetime = deviceTokenLifetime
        self.shutdownGracePeriod = shutdownGracePeriod
        self.blobs = blobsDirectory.map(BlobLocation.folder)
        self.assets = assets
        self.privateQuotaBytes = privateQuotaBytes
        self.publicQuotaBytes = publicQuotaBytes
        self.assetGarbageCollectionInterval = assetGarbageCollectionInterval
        self.assetGarbageMinimumAge = assetGarbageMinimumAge
        self.host = host
        self.port = port
        self.tlsCertificatePath = tlsCertificatePath
        self.tlsKeyPath = tlsKeyPath
        self.maximumBodySize = maximumBodySize
        self.publicURL = publicURL
        self.webAuthTokenLifetime = webAuthTokenLifetime
        self.longWebAuthTokenLifetime = longWebAuthTokenLifetime
        self.signatureSkew = signatureSkew
        self.rateLimit = rateLimit
        self.rateLimitBurst = rateLimitBurst
        self.unavailableRetryAfter = unavailableRetryAfter
    }
}
