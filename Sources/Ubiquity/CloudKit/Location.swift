// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// A geographic location stored in a `LOCATION` field: what a `CLLocation` carries, without
/// CoreLocation (which Linux does not have). Negative accuracies mean "unknown", as in
/// CoreLocation.
public struct Location: Sendable, Hashable, CustomStringConvertible {
    /// Degrees north, -90…90.
    public var latitude: Double
    /// Degrees east, -180…180.
    public var longitude: Double
    /// Metres above sea level.
    public var altitude: Double?
    /// Radius of uncertainty of the coordinate, in metres.
    public var horizontalAccuracy: Double?
    /// Uncertainty of the altitude, in metres.
    public var verticalAccuracy: Double?
    /// Direction of travel in degrees from true north.
    public var course: Double?
    /// Speed in metres per second.
    public var speed: Double?
    /// When the location was measured.
    public var timestamp: Date?

    /// Makes a location.
    public init(latitude: Double, longitude: Double, altitude: Double? = nil, horizontalAccuracy: Double? = nil,
                verticalAccuracy: Double? = nil, course: Double? = nil, speed: Double? = nil, timestamp: Date? = nil) {
        self.latitude = latitude
        self.longitude = longitude
        self.altitude = altitude
        self.horizontalAccuracy = horizontalAccuracy
        self.verticalAccuracy = verticalAccuracy
        self.course = course
        self.speed = speed
        self.timestamp = timestamp
    }

    /// The great-circle distance to `other` in metres (`CLLocation.distance(from:)`).
    public func distance(from other: Location) -> Double { wire.distance(to: other.wire) }

    /// `<latitude,longitude>`.
    public var description: String { "<\(latitude),\(longitude)>" }
}

extension Location {
    var wire: WireLocation {
        WireLocation(latitude: latitude, longitude: longitude, horizontalAccuracy: horizontalAccuracy,
                     verticalAccuracy: verticalAccuracy, altitude: altitude, speed: speed, course: course,
                     timestamp: timestamp.map(RecordValue.milliseconds))
    }

    init(wire: WireLocation) {
        self.init(latitude: wire.latitude, longitude: wire.longitude, altitude: wire.altitude,
                  horizontalAccuracy: wire.horizontalAccuracy, verticalAccuracy: wire.verticalAccuracy,
                  course: wire.course, speed: wire.speed, timestamp: wire.timestamp.map(RecordValue.date(milliseconds:)))
    }
}

/// An asset field's value as the server describes it (`ASSETID`): checksums, size and, on
/// fetch, where to download it. Uploading assets is not part of this client yet; asset values
/// of fetched records are kept so that saving the record back does not lose them.
public struct Asset: Sendable, Hashable {
    /// The content's checksum.
    public var fileChecksum: String?
    /// The content's size in bytes.
    public var size: Int64?
    /// Private database: the checksum of the encrypted content.
    public var referenceChecksum: String?
    /// Private database: the key wrapping the content's encryption key.
    public var wrappingKey: String?
    /// The upload receipt (needed when saving a freshly uploaded asset).
    public var receipt: String?
    /// Where to download the content (on fetch); `${f}` stands for a file name.
    public var downloadURL: String?

    /// Makes an asset value.
    public init(fileChecksum: String? = nil, size: Int64? = nil, referenceChecksum: String? = nil, wrappingKey: String? = nil,
                receipt: String? = nil, downloadURL: String? = nil) {
        self.fileChecksum = fileChecksum
        self.size = size
        self.referenceChecksum = referenceChecksum
        self.wrappingKey = wrappingKey
        self.receipt = receipt
        self.downloadURL = downloadURL
    }
}

extension Asset {
    var wire: WireAsset {
        WireAsset(fileChecksum: fileChecksum, size: size, referenceChecksum: referenceChecksum, wrappingKey: wrappingKey,
                  receipt: receipt, downloadURL: downloadURL)
    }

    init(wire: WireAsset) {
        self.init(fileChecksum: wire.fileChecksum, size: wire.size, referenceChecksum: wire.referenceChecksum,
                  wrappingKey: wire.wrappingKey, receipt: wire.receipt, downloadURL: wire.downloadURL)
    }
}
