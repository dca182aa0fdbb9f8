// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire
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
