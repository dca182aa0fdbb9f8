// SPDX-License-Identifier: Apache-2.0
import Foundation
import Ubiquity

extension KeyValueSync {
    /// How often the clock offset from the server is measured again.
    static let clockCheckInterval = Duration.seconds(600)

    /// Keeps the store's record of this clock's offset from the server's (``ServerClock``), so
    /// timestamps of changes made here are on the server's clock and last-writer-wins holds
    /// between devices whose clocks disagree. Offsets under 2 s (the measurement's resolution)
    /// are taken as none. Runs until cancelled.
    func keepClockOffset() async {
        var warned = false
        repeat {
            if let skew = await ServerClock.skew(serverURL: container.serverURL) {
                let offset: Int64? = abs(skew) < 2 ? nil : Int64((-skew * 1000).rounded())
                let database = self.database
                do {
                    try await BlockingWork.run { try database.setClockOffset(offset) }
                } catch {
                    logger.warning("cannot record the clock offset", metadata: ["error": "\(error)"])
                }
                if abs(skew) > 60, !warned {
                    warned = true
                    logger.warning("this clock is \(Int(abs(skew))) s \(skew > 0 ? "ahead of" : "behind") the server's; key-value changes are timed on the server's clock")
                }
            }
        } while (try? await Task.sleep(for: Self.clockCheckInterval)) != nil
    }
}
