// SPDX-License-Identifier: Apache-2.0

/// Which of a document's stored versions to keep, the way Nextcloud thins its versions: every
/// version from the last 10 seconds, then one per 10 seconds for the first minute, one per minute
/// for the first hour, one per hour for the first day, one per day for the first 30 days, and one
/// per week after that. The newest version (the document's current content) is always kept.
///
/// A value with no I/O: ``DocumentHistoryRecorder`` applies it inside the upload's transaction.
package struct VersionThinning: Sendable, Hashable {
    /// One age band: versions younger than `age` milliseconds keep one per `step` milliseconds.
    package struct Band: Sendable, Hashable {
        /// The upper bound of the band's ages (exclusive), in milliseconds.
        package var age: Int64
        /// The spacing kept inside the band, in milliseconds (0: every version).
        package var step: Int64
    }

    /// The bands, youngest first; versions older than the last band's age keep one per
    /// ``olderStep``.
    package var bands: [Band]
    /// The spacing kept beyond the last band (a week).
    package var olderStep: Int64

    /// Nextcloud's schedule.
    package static let nextcloud = VersionThinning(bands: [
        Band(age: 10_000, step: 0),
        Band(age: 60_000, step: 10_000),
        Band(age: 3_600_000, step: 60_000),
        Band(age: 86_400_000, step: 3_600_000),
        Band(age: 30 * 86_400_000, step: 86_400_000),
    ], olderStep: 7 * 86_400_000)

    /// Makes a schedule.
    package init(bands: [Band], olderStep: Int64) {
        self.bands = bands
        self.olderStep = olderStep
    }

    /// The spacing kept for a version `age` milliseconds old.
    package func step(forAge age: Int64) -> Int64 {
        bands.first { age < $0.age }?.step ?? olderStep
    }

    /// The versions to drop: `savedAt` are the versions' times (milliseconds since 1970, any
    /// order), `now` the present. Walking from the newest to the oldest, a version is kept when
    /// it is at least its band's step older than the last version kept; the newest is kept.
    /// Returns the indices into `savedAt` of the versions to drop.
    package func dropped(savedAt: [Int64], now: Int64) -> [Int] {
        let newestFirst = savedAt.indices.sorted { savedAt[$0] != savedAt[$1] ? savedAt[$0] > savedAt[$1] : $0 > $1 }
        guard let newest = newestFirst.first else { return [] }
        var lastKept = savedAt[newest]
        var drop: [Int] = []
        for index in newestFirst.dropFirst() {
            let time = savedAt[index]
            let step = self.step(forAge: max(0, now - time))
            if step == 0 || lastKept - time >= step {
                lastKept = time
            } else {
                drop.append(index)
            }
        }
        return drop
    }
}
