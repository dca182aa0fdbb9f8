// SPDX-License-Identifier: Apache-2.0
import Foundation

/// CloudKit's completion-handler forms of the convenience methods. Handlers are called once,
/// from a new task.
extension CloudDatabase {
    /// Saves a record (``save(_:)-(Record)``).
    public func save(_ record: Record, completionHandler: @escaping @Sendable (Record?, (any Error)?) -> Void) {
        Task {
            do { completionHandler(try await save(record), nil) } catch { completionHandler(nil, error) }
        }
    }

    /// Fetches a record (``record(for:)``).
    public func fetch(withRecordID recordID: Record.ID, completionHandler: @escaping @Sendable (Record?, (any Error)?) -> Void) {
        Task {
            do { completionHandler(try await record(for: recordID), nil) } catch { completionHandler(nil, error) }
        }
    }

    /// Deletes a record (``deleteRecord(withID:)``).
    public func delete(withRecordID recordID: Record.ID, completionHandler: @escaping @Sendable (Record.ID?, (any Error)?) -> Void) {
        Task {
            do { completionHandler(try await deleteRecord(withID: recordID), nil) } catch { completionHandler(nil, error) }
        }
    }

    /// Runs a query and returns the records of its first page (`perform(_:inZoneWith:completionHandler:)`).
    public func perform(_ query: Query, inZoneWith zoneID: RecordZone.ID?, completionHandler: @escaping @Sendable ([Record]?, (any Error)?) -> Void) {
        Task {
            do {
                let (matches, _) = try await records(matching: query, inZoneWith: zoneID)
                completionHandler(try matches.map { try $0.1.get() }, nil)
            } catch {
                completionHandler(nil, error)
            }
        }
    }

    /// Creates a zone (``save(_:)-(RecordZone)``).
    public func save(_ zone: RecordZone, completionHandler: @escaping @Sendable (RecordZone?, (any Error)?) -> Void) {
        Task {
            do { completionHandler(try await save(zone), nil) } catch { completionHandler(nil, error) }
        }
    }

    /// Fetches a zone (``recordZone(for:)``).
    public func fetch(withRecordZoneID zoneID: RecordZone.ID, completionHandler: @escaping @Sendable (RecordZone?, (any Error)?) -> Void) {
        Task {
            do { completionHandler(try await recordZone(for: zoneID), nil) } catch { completionHandler(nil, error) }
        }
    }

    /// Fetches every zone (``allRecordZones()``).
    public func fetchAllRecordZones(completionHandler: @escaping @Sendable ([RecordZone]?, (any Error)?) -> Void) {
        Task {
            do { completionHandler(try await allRecordZones(), nil) } catch { completionHandler(nil, error) }
        }
    }

    /// Deletes a zone (``deleteRecordZone(withID:)``).
    public func delete(withRecordZoneID zoneID: RecordZone.ID, completionHandler: @escaping @Sendable (RecordZone.ID?, (any Error)?) -> Void) {
        Task {
            do { completionHandler(try await deleteRecordZone(withID: zoneID), nil) } catch { completionHandler(nil, error) }
        }
    }
}
