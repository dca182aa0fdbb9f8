// SPDX-License-Identifier: Apache-2.0
import Ubiquity
import UbiquityCloudKit

/// The pages of one listing of a zone's changes, fetched ahead of the one being looked at.
///
/// A page's change token is all the next request needs, so a task fetches page after page
/// while the engine works on the ones it has (writes the new files of a long listing): the
/// server's work and this device's overlap instead of taking turns. At most ``ahead`` pages
/// are fetched beyond the ones taken with ``next(isolation:)``; the first error ends the
/// listing (it is thrown by the `next` that would have returned that page).
final class ZoneChangePages {
    /// One page, as ``CloudDatabase/recordZoneChanges(inZoneWith:since:desiredKeys:resultsLimit:)`` returns it.
    typealias Page = (modificationResultsByID: [Record.ID: Result<CloudDatabase.RecordZoneChange.Modification, any Error>],
                      deletions: [CloudDatabase.RecordZoneChange.Deletion], changeToken: ServerChangeToken, moreComing: Bool)

    private var pages: AsyncThrowingStream<Page, any Error>.Iterator
    private let credits: AsyncStream<Void>.Continuation
    private let fetcher: Task<Void, Never>

    /// Starts listing `zoneID`'s changes since `token` (everything when nil), at most `ahead`
    /// pages (at least one) beyond the ones taken.
    init(database: CloudDatabase, zoneID: RecordZone.ID, since token: ServerChangeToken?, ahead: Int) {
        let (pages, pageOut) = AsyncThrowingStream<Page, any Error>.makeStream()
        let (credits, creditIn) = AsyncStream<Void>.makeStream()
        for _ in 0..<max(ahead, 1) { creditIn.yield() }
        fetcher = Task {
            var token = token
            for await _ in credits {
                do {
                    let page = try await database.recordZoneChanges(inZoneWith: zoneID, since: token)
                    pageOut.yield(page)
                    guard page.moreComing else { break }
                    token = page.changeToken
                } catch {
                    pageOut.finish(throwing: error)
                    return
                }
            }
            // the last page, or cancelled: a cancelled listing ends without a page
            pageOut.finish(throwing: Task.isCancelled ? CancellationError() : nil)
        }
        self.pages = pages.makeAsyncIterator()
        self.credits = creditIn
    }

    deinit { cancel() }

    /// The next page; nil after the last one (the one whose `moreComing` is false).
    func next(isolation: isolated (any Actor)? = #isolation) async throws -> Page? {
        let page = try await pages.next(isolation: isolation)
        if page != nil { credits.yield() }
        return page
    }

    /// Stops fetching (a request in flight is cancelled).
    func cancel() {
        fetcher.cancel()
        credits.finish()
    }
}
