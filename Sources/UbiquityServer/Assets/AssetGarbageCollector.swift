// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import ServiceLifecycle
import UbiquityCore

/// The periodic task of `ubiq serve` that deletes asset content no record refers to
/// (`RecordsEngine.collectAssetGarbage(olderThan:)`), every `interval` seconds, keeping content
/// younger than `minimumAge` seconds. Stops on graceful shutdown.
struct AssetGarbageCollector: Service {
    let engine: RecordsEngine
    let interval: Double
    let minimumAge: Double
    let logger: Logger

    func run() async throws {
        guard interval > 0 else { return }
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await Task.sleep(for: .seconds(interval))
                } catch {
                    return
                }
                do {
                    try await engine.collectAssetGarbage(olderThan: Date().addingTimeInterval(-minimumAge))
                } catch {
                    logger.error("asset garbage collection failed", metadata: ["error": "\(error)"])
                }
            }
        }
    }
}
