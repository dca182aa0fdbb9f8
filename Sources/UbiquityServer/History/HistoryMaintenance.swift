// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import ServiceLifecycle
import UbiquityCore

/// The periodic task of `ubiq serve` that forgets what stayed in Recently Deleted longer than
/// its days (``DocumentHistory/pruneTrash(now:)``): at start, then every hour (a backstop timer:
/// nothing tells the server a day has passed). Stops on graceful shutdown.
struct HistoryMaintenance: Service {
    let history: DocumentHistory
    let logger: Logger
    /// Seconds between prunes.
    var interval: Double = 3600

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    let pruned = try await history.pruneTrash(now: Int64(Date().timeIntervalSince1970 * 1000))
                    if pruned > 0 { logger.info("expired items left Recently Deleted", metadata: ["count": "\(pruned)"]) }
                } catch {
                    logger.error("pruning Recently Deleted failed", metadata: ["error": "\(error)"])
                }
                do { try await Task.sleep(for: .seconds(interval)) } catch { return }
            }
        }
    }
}
