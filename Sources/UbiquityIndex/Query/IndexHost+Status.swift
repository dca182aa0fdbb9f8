import UbiquityStore

extension IndexHost {
    /// What is indexed, for `ubiq index status`: the index's counts and roots, the watcher's
    /// watches, and the warnings not yet reported.
    package func statusReport(database: String?) throws -> IndexStatusReport {
        let status = try index.status()
        let pending = state.withLock { $0.messages }
        return IndexStatusReport(
            database: database,
            items: status.itemCount,
            folders: status.folderCount,
            roots: status.roots.map {
                IndexStatusReport.Root(path: $0.path, lastScan: $0.lastScanFinished, rescanPending: $0.rescanPending, message: $0.message)
            },
            watches: watcher.watchCount,
            rebuilt: status.wasRebuilt,
            messages: pending
        )
    }
}
