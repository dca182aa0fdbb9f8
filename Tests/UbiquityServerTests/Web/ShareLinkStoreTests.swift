// SPDX-License-Identifier: Apache-2.0
import Testing
import UbiquityServer

/// Share links keep the same rows on both stores: stored by digest, listed per database newest
/// first, revoked only by their own database.
@Suite struct ShareLinkStoreTests {
    @Test(arguments: StoreKind.available)
    func linksAreStoredListedAndRevoked(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store in
            let first = StoredShareLink(digest: "d1", database: 1, recordName: "a", path: "notes.txt", createdAt: 100, expiresAt: 200, passwordHash: nil)
            let second = StoredShareLink(digest: "d2", database: 1, recordName: "b", path: "Reports", createdAt: 150, expiresAt: 900, passwordHash: "hash")
            let other = StoredShareLink(digest: "d3", database: 2, recordName: "c", path: "theirs.txt", createdAt: 120, expiresAt: 900, passwordHash: nil)
            try await store.write { tx in
                for link in [first, second, other] { try await tx.shareStore().addShareLink(link) }
            }
            let (found, listed) = try await store.read { tx in
                (try await tx.shareStore().shareLink(digest: "d2"), try await tx.shareStore().shareLinks(database: 1))
            }
            #expect(found == second)
            #expect(listed == [second, first])
            let revoked = try await store.write { tx in
                (try await tx.shareStore().deleteShareLink(database: 1, digest: "d3"), try await tx.shareStore().deleteShareLink(database: 2, digest: "d3"))
            }
            #expect(revoked == (false, true))
            #expect(try await store.read { tx in try await tx.shareStore().shareLink(digest: "d3") } == nil)
        }
    }
}
