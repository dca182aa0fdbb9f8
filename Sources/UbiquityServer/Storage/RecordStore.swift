// SPDX-License-Identifier: Apache-2.0
import UbiquityCore
import UbiquityWire

/// Where the server keeps everything: containers, accounts, credentials, zones, records and their
/// change logs. Two implementations — `SQLiteRecordStore` (GRDB, embedded, the default) and
/// `PostgresRecordStore` (postgres-nio) — behind this one protocol, checked by one conformance
/// suite.
///
/// The CloudKit semantics (save policies, atomic batches, references, tokens) live once, in
/// `RecordsEngine`, written against the asynchronous primitives of `RecordStoreTransaction`.
/// SQLite runs each transaction's body on GRDB's reader or writer thread
/// (`SQLiteTransactionExecutor`), PostgreSQL awaits each statement on a connection leased from
/// postgres-nio's `PostgresClient`: neither blocks Swift's cooperative pool.
package protocol RecordStore: Sendable {
    /// Runs `body` in a read-only transaction that sees one consistent snapshot.
    func read<T: Sendable>(_ body: @escaping @Sendable (any RecordStoreTransaction) async throws -> T) async throws -> T
    /// Runs `body` in a read-write transaction: all of its writes commit together or none do
    /// (an error thrown by `body` rolls back). Writers of one database are serialized by
    /// `lockDatabase(_:)`, across processes too.
    func write<T: Sendable>(_ body: @escaping @Sendable (any RecordStoreTransaction) async throws -> T) async throws -> T
    /// Runs `body`'s reads outside a transaction: each statement is consistent by itself and sees
    /// what was committed when it ran, but no snapshot is common to them; PostgreSQL is spared the
    /// `BEGIN` and `COMMIT` round trips, SQLite the transaction. For the reads of a request whose
    /// statements each read their own facts (credentials, a lookup), not for reads that must agree
    /// with each other (a query's keys and then its records, a change feed and its token).
    func readWithoutSnapshot<T: Sendable>(_ body: @escaping @Sendable (any RecordStoreTransaction) async throws -> T) async throws -> T
    /// Closes connections; later calls fail.
    func close() async throws
    /// A short description for logs and `/healthz` (`"sqlite /path"`, `"postgres host/db"`).
    var description: String { get }
}

extension RecordStore {
    /// ``read(_:)``: a store whose read transactions cost nothing needs nothing else.
    package func readWithoutSnapshot<T: Sendable>(_ body: @escaping @Sendable (any RecordStoreTransaction) async throws -> T) async throws -> T {
        try await read(body)
    }
}

/// The primitives a `RecordsEngine` needs, inside one transaction (call them only from a store's
/// transaction closure, never after it returned).
package protocol RecordStoreTransaction {
    // MARK: Containers and credentials

    /// Adds a container (no error when it exists).
    func addContainer(_ identifier: String, createdAt: Int64) async throws
    /// Whether the container exists.
    func containerExists(_ identifier: String) async throws -> Bool
    /// All container identifiers, sorted.
    func containers() async throws -> [String]
    /// Stores an API token's digest for a container.
    func addAPIToken(container: String, digest: String, createdAt: Int64) async throws
    /// The container an API token digest belongs to.
    func container(forAPITokenDigest digest: String) async throws -> String?
    /// The web origins (`https://app.example.org`) the container's sign-in page may hand a token
    /// to (CloudKit's "Allowed Origins"), sorted.
    func allowedOrigins(container: String) async throws -> [String]
    /// Adds (`allowed: true`) or removes an allowed origin of the container.
    func setAllowedOrigin(_ allowed: Bool, container: String, origin: String) async throws
    /// Adds an account; `alreadyExists` when the name (or e-mail) is taken.
    func addAccount(name: String, email: String?, passwordHash: String?, createdAt: Int64) async throws -> StoredAccount
    /// The account with this name.
    func account(named name: String) async throws -> StoredAccount?
    /// The account with this id.
    func account(id: Int64) async throws -> StoredAccount?
    /// Stores a web-auth or device token (its digest) for an account.
    func addWebAuthToken(_ token: StoredWebAuthToken) async throws
    /// The live token with this digest (not expired at `now`) and its account, unless the
    /// account is disabled.
    func webAuthToken(digest: String, now: Int64) async throws -> (token: StoredWebAuthToken, account: StoredAccount)?
    /// What a request's tokens name, in one statement: the container of the API token with
    /// digest `apiTokenDigest` and, when `webTokenDigest` is given, ``webAuthToken(digest:now:)``
    /// of it (how every token-authenticated request starts; run it with `readWithoutSnapshot`).
    func credentials(apiTokenDigest: String, webTokenDigest: String?, now: Int64) async throws
        -> (container: String?, live: (token: StoredWebAuthToken, account: StoredAccount)?)
    /// An account's tokens not expired at `now`, oldest first.
    func webAuthTokens(accountID: Int64, now: Int64) async throws -> [StoredWebAuthToken]
    /// Deletes the tokens of a session (``StoredWebAuthToken/session``); how many.
    func revokeWebAuthSession(_ session: String) async throws -> Int
    /// Deletes all of an account's tokens; how many.
    func revokeWebAuthTokens(accountID: Int64) async throws -> Int
    /// Replaces an account's password hash (nil: no password, token sign-in only).
    func setPasswordHash(accountID: Int64, _ hash: String?) async throws
    /// Disables an account from `at` (milliseconds since 1970), or enables it (nil).
    func setAccountDisabled(accountID: Int64, at: Int64?) async throws
    /// The sign-in backoff entry of `key` (``SignInGuard``), or nil; with `forUpdate`, locked
    /// for the rest of the write transaction (PostgreSQL: across processes).
    func signInBackoff(_ key: String, forUpdate: Bool) async throws -> SignInBackoff.Entry?
    /// Stores the sign-in backoff entry of `key`; nil forgets it.
    func setSignInBackoff(_ key: String, _ entry: SignInBackoff.Entry?) async throws
    /// Forgets the sign-in backoff entries not blocked at `now` and without a failure since
    /// `quietSince`.
    func pruneSignInBackoffs(quietSince: Double, now: Double) async throws
    /// Registers a server-to-server public key (SPKI PEM) under a key ID.
    func addServerKey(container: String, keyID: String, publicKeyPEM: String, createdAt: Int64) async throws
    /// The PEM of a server-to-server key of a container.
    func serverKey(container: String, keyID: String) async throws -> String?

    // MARK: Databases and zones

    /// Returns the database, creating it when missing, and locks it for the rest of a write
    /// transaction (`SELECT … FOR UPDATE` on PostgreSQL; SQLite has one writer). Call it first in
    /// every write transaction that changes the database, before any zone.
    func lockDatabase(_ key: DatabaseKey) async throws -> StoredDatabase
    /// The database, or nil when nothing was ever written to it (no lock).
    func database(_ key: DatabaseKey) async throws -> StoredDatabase?
    /// The live zone with this name.
    func zone(database: Int64, name: String) async throws -> StoredZone?
    /// The live zone with this name in the database `key` (nil when either is missing), in one
    /// statement: how reads find their zone.
    func zone(key: DatabaseKey, name: String) async throws -> StoredZone?
    /// The zone with this id, live or deleted.
    func zone(id: Int64) async throws -> StoredZone?
    /// The live zones of a database, by name.
    func zones(database: Int64) async throws -> [StoredZone]
    /// Creates a zone (a new id, even when a deleted zone had the name).
    func createZone(database: Int64, name: String, createdAt: Int64) async throws -> StoredZone
    /// Deletes a zone and all its records permanently (the zone row stays, marked deleted).
    func deleteZone(id: Int64) async throws
    /// Advances the database's change counter and records that `zone` changed (or was deleted)
    /// at the new value; returns it. Each zone appears once in the database change log, at its
    /// latest change.
    func noteZoneChanged(database: Int64, zone: Int64) async throws -> Int64
    /// Zones changed after `sequence`, oldest change first, at most `limit`.
    func zoneChanges(database: Int64, after sequence: Int64, limit: Int) async throws -> [StoredZoneChange]
    /// Advances a zone's change counter and returns the new value (under the database lock).
    func nextZoneSequence(zone: Int64) async throws -> Int64
    /// Advances a zone's change counter by `count` (≥ 1) and returns the new value: the values
    /// `result - count + 1 … result` are the caller's.
    func reserveZoneSequences(zone: Int64, count: Int) async throws -> Int64
    /// Forgets tombstones of a zone up to `sequence`: tokens older than that become expired.
    func purgeTombstones(zone: Int64, through sequence: Int64) async throws

    // MARK: Records

    /// The record (or tombstone) with this name in a zone.
    func record(zone: Int64, name: String) async throws -> StoredRecord?
    /// The records (and tombstones) with these names in a zone, by name; missing names are absent.
    func records(zone: Int64, names: [String]) async throws -> [String: StoredRecord]
    /// Inserts or replaces a record (or tombstone) by zone and name, with its index entries.
    func putRecord(_ record: StoredRecord) async throws
    /// Inserts or replaces records of the zone named `zoneName`, in order, with their index
    /// entries: `putRecord` for each, in fewer statements. Names must be distinct. `replacing`
    /// names the records that have a row (live or tombstone) already; the others are new.
    func putRecords(_ writes: [RecordWrite], zoneName: String, replacing: Set<String>) async throws
    /// Records and tombstones changed after `sequence` in a zone, in change order, at most
    /// `limit`, optionally only of some record types (tombstones always included).
    func changes(zone: Int64, after sequence: Int64, limit: Int, recordTypes: [String]?) async throws -> [StoredRecord]
    /// ``changes(zone:after:limit:recordTypes:)`` with each record's fields left as stored:
    /// the records' `fields` are empty, their stored JSON text beside them (`{}` for tombstones).
    func changesKeepingFieldsText(zone: Int64, after sequence: Int64, limit: Int, recordTypes: [String]?) async throws -> [StoredRecordText]
    /// Live records of a type in the zones whose index entries satisfy every condition
    /// (a superset of the query's matches: the engine filters exactly afterwards).
    func candidates(zones: [Int64], recordType: String, conditions: [IndexCondition]) async throws -> [StoredRecord]
    /// The keys of `candidates(…)`'s records, without decoding them: each record's row id, zone,
    /// name, system stamps and the index entry of each of `fields` (its first, for scalars the
    /// only one), in row-id order.
    func candidateKeys(zones: [Int64], recordType: String, conditions: [IndexCondition], fields: [String]) async throws -> [StoredRecordKeys]
    /// Records by row id (those that exist), by id.
    func records(ids: [Int64]) async throws -> [Int64: StoredRecord]
    /// The records (and tombstones) with these names in a zone, their fields left as stored, by
    /// name, in one statement: what `records/lookup` answers with.
    func recordTexts(zone: Int64, names: [String]) async throws -> [String: StoredRecordText]
    /// The live zone named `zoneName` of the database (nil when it has none) and its records named
    /// `names` (``recordTexts(zone:names:)``), in one round trip where the store can: a lookup.
    func recordTexts(key: DatabaseKey, zoneName: String, names: [String]) async throws -> (zone: StoredZone?, records: [String: StoredRecordText])
    /// What a query reads before its page: the record type (with `userRecordName`'s roles),
    /// the live zone named `zoneName` (nil: every live zone of the database) and the type's
    /// query indexes, in one round trip where the store can (``QueryTarget``).
    func queryTarget(key: DatabaseKey, zoneName: String?, recordType: String, rolesOf userRecordName: String?) async throws -> QueryTarget
    /// Live records in `zones` with a reference field pointing at the target.
    func referencing(zones: [Int64], targetZone: String, targetName: String) async throws -> [StoredRecord]

    // MARK: Assets, usage and secrets

    /// The bytes a database uses: its live records' stored fields JSON and its distinct assets,
    /// kept up to date by `putRecords`/`putRecord`/`deleteZone` (no scan).
    func databaseUsage(database: Int64) async throws -> StoredUsage
    /// Which of `checksums` some live record of the database refers to already.
    func referencedAssets(database: Int64, checksums: [String]) async throws -> Set<String>
    /// The distinct `fileChecksum`s that any live record of any database refers to, and those
    /// the documents' history keeps (versions, Recently Deleted): what the blob store's garbage
    /// collection keeps.
    func referencedAssetChecksums() async throws -> Set<String>
    /// The secret named `name`: stores `candidate` when there is none yet (insert-if-absent, so
    /// servers starting at once on one store agree) and returns the stored value.
    func serverSecret(name: String, candidate: String, createdAt: Int64) async throws -> String
}

/// What a database uses, in bytes (quotas).
package struct StoredUsage: Sendable, Hashable {
    /// The stored fields JSON of its live records.
    package var recordBytes: Int64
    /// The sizes of the distinct assets its live records refer to (each counted once).
    package var assetBytes: Int64
    /// Both.
    package var total: Int64 { recordBytes + assetBytes }
    /// Makes a usage.
    package init(recordBytes: Int64 = 0, assetBytes: Int64 = 0) {
        self.recordBytes = recordBytes
        self.assetBytes = assetBytes
    }
}

/// A record's keys, from `candidateKeys`: what queries filter and sort on, read off the index
/// and the record's columns, without its fields' JSON.
package struct StoredRecordKeys: Sendable {
    /// The row id (for `records(ids:)`).
    package var id: Int64
    package var zone: Int64
    package var recordName: String
    package var created: WireRecordStamp
    package var modified: WireRecordStamp
    /// The index entry of each requested field the record has.
    package var entries: [String: RecordIndexEntry]
    /// Makes keys.
    package init(id: Int64, zone: Int64, recordName: String, created: WireRecordStamp, modified: WireRecordStamp, entries: [String: RecordIndexEntry]) {
        self.id = id
        self.zone = zone
        self.recordName = recordName
        self.created = created
        self.modified = modified
        self.entries = entries
    }
}

/// A record to write with `putRecords`, with its fields' stored JSON (computed once by the
/// engine, which needs its size).
package struct RecordWrite: Sendable {
    package var record: StoredRecord
    /// `record.fieldsJSON` (ignored for tombstones).
    package var fieldsJSON: String
    /// Makes a write.
    package init(record: StoredRecord, fieldsJSON: String) {
        self.record = record
        self.fieldsJSON = fieldsJSON
    }
}

/// A record read with its fields left as the stored JSON text (``StoredRecord/fieldsJSON``'s
/// form), not decoded: what `changes/zone` sends on as it is when nothing needs adding to it.
package struct StoredRecordText: Sendable {
    /// The record, its `fields` empty.
    package var record: StoredRecord
    /// The stored fields JSON (`{}` for tombstones).
    package var fieldsText: String
    /// Makes one.
    package init(record: StoredRecord, fieldsText: String) {
        self.record = record
        self.fieldsText = fieldsText
    }
}

/// Identifies one database: a container's environment's public database, or one user's private
/// database.
package struct DatabaseKey: Sendable, Hashable, CustomStringConvertible {
    package var container: String
    package var environment: CloudKitEnvironment
    /// `.public` or `.private` (the shared database is other users' private zones).
    package var scope: CloudKitDatabaseScope
    /// The owner's user record name for a private database; `""` for the public one.
    package var owner: String

    /// Makes a key.
    package init(container: String, environment: CloudKitEnvironment, scope: CloudKitDatabaseScope, owner: String) {
        self.container = container
        self.environment = environment
        self.scope = scope
        self.owner = scope == .public ? "" : owner
    }

    /// `container/environment/scope[/owner]`.
    package var description: String {
        "\(container)/\(environment.rawValue)/\(scope.rawValue)" + (owner.isEmpty ? "" : "/\(owner)")
    }
}

/// A database row: its id and its database-level change counter.
package struct StoredDatabase: Sendable, Hashable {
    package var id: Int64
    package var key: DatabaseKey
    /// The latest database change sequence (0 before any change).
    package var sequence: Int64
    /// Makes a row.
    package init(id: Int64, key: DatabaseKey, sequence: Int64) {
        self.id = id
        self.key = key
        self.sequence = sequence
    }
}

/// A zone row.
package struct StoredZone: Sendable, Hashable {
    /// Unique in the store; a zone deleted and created again gets a new id.
    package var id: Int64
    package var database: Int64
    package var name: String
    /// The latest change sequence of the zone's records (0 before any change).
    package var sequence: Int64
    /// Tombstones up to this sequence are forgotten.
    package var purgedThrough: Int64
    package var deleted: Bool
    /// Milliseconds since 1970.
    package var createdAt: Int64
    /// Makes a row.
    package init(id: Int64, database: Int64, name: String, sequence: Int64, purgedThrough: Int64, deleted: Bool, createdAt: Int64) {
        self.id = id
        self.database = database
        self.name = name
        self.sequence = sequence
        self.purgedThrough = purgedThrough
        self.deleted = deleted
        self.createdAt = createdAt
    }
}

/// One entry of a database's change log.
package struct StoredZoneChange: Sendable, Hashable {
    package var zone: StoredZone
    /// The database sequence at which the zone last changed.
    package var sequence: Int64
    /// Makes an entry.
    package init(zone: StoredZone, sequence: Int64) {
        self.zone = zone
        self.sequence = sequence
    }
}

/// An account (a person who signs in).
package struct StoredAccount: Sendable, Hashable {
    package var id: Int64
    package var name: String
    package var email: String?
    /// The password's KDF string (`$scrypt$…`), nil for token-only accounts.
    package var passwordHash: String?
    /// Milliseconds since 1970.
    package var createdAt: Int64
    /// When an administrator disabled the account (milliseconds since 1970); nil when enabled.
    /// A disabled account's tokens are refused and it cannot sign in.
    package var disabledAt: Int64?
    /// Makes a row.
    package init(id: Int64, name: String, email: String?, passwordHash: String?, createdAt: Int64, disabledAt: Int64? = nil) {
        self.id = id
        self.name = name
        self.email = email
        self.passwordHash = passwordHash
        self.createdAt = createdAt
        self.disabledAt = disabledAt
    }
}

/// A web-auth or device token as the store keeps it: its digest, never the token.
package struct StoredWebAuthToken: Sendable, Hashable {
    /// The token's digest (``SecretToken/digest(_:)``).
    package var digest: String
    /// The account it signs in.
    package var accountID: Int64
    /// The only container it is valid in; nil for any container (device tokens, and tokens an
    /// administrator issued without a container).
    package var container: String?
    /// The digest of the session's first token: a rotated token carries its predecessor's
    /// session (and expiry), and revoking a session revokes every token of it.
    package var session: String
    /// Whether it is a device token (``SecretToken/generateDeviceToken()``).
    package var isDevice: Bool
    /// Milliseconds since 1970.
    package var createdAt: Int64
    /// Milliseconds since 1970; the token is refused from then on.
    package var expiresAt: Int64
    /// Makes a row; `session` defaults to a new session started by this token.
    package init(digest: String, accountID: Int64, container: String?, session: String? = nil, isDevice: Bool, createdAt: Int64, expiresAt: Int64) {
        self.digest = digest
        self.accountID = accountID
        self.container = container
        self.session = session ?? digest
        self.isDevice = isDevice
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }

    /// The session's short name for administrators (`ubiq admin user tokens`): the first 16
    /// hex digits of its digest.
    package var sessionID: String { String(session.prefix(16)) }
}

/// A record as stored: the wire record's content plus its zone, change sequence and tombstone flag.
package struct StoredRecord: Sendable, Hashable {
    package var zone: Int64
    package var recordName: String
    package var recordType: String
    package var changeTag: String
    /// The zone sequence of the record's latest change.
    package var sequence: Int64
    /// A tombstone: the record was deleted at `sequence`.
    package var deleted: Bool
    package var fields: [String: WireFieldValue]
    package var created: WireRecordStamp
    package var modified: WireRecordStamp
    package var parent: String?
    package var shortGUID: String?

    /// Makes a record.
    package init(zone: Int64, recordName: String, recordType: String, changeTag: String, sequence: Int64, deleted: Bool,
                fields: [String: WireFieldValue], created: WireRecordStamp, modified: WireRecordStamp,
                parent: String? = nil, shortGUID: String? = nil) {
        self.zone = zone
        self.recordName = recordName
        self.recordType = recordType
        self.changeTag = changeTag
        self.sequence = sequence
        self.deleted = deleted
        self.fields = fields
        self.created = created
        self.modified = modified
        self.parent = parent
        self.shortGUID = shortGUID
    }
}

/// A condition on a record's index entries, for `candidates(…)`. Stores translate these to SQL
/// over their index table, whose rows are `RecordIndexEntry.entries(for:)`.
package enum IndexCondition: Sendable, Hashable {
    /// Some entry of the field compares to the value (`=`, `<>`, `<`, `<=`, `>`, `>=`).
    case compare(field: String, IndexComparison, IndexValue)
    /// Some entry of the field equals one of the values.
    case anyOf(field: String, [IndexValue])
    /// Some text entry of the field starts with the prefix (case-sensitive).
    case prefix(field: String, String)
    /// Some location entry of the field is inside the box (degrees; `minLongitude > maxLongitude`
    /// wraps the antimeridian).
    case box(field: String, minLatitude: Double, maxLatitude: Double, minLongitude: Double, maxLongitude: Double)
}

extension IndexCondition {
    /// The field the condition is on.
    package var field: String {
        switch self {
        case .compare(let field, _, _), .anyOf(let field, _), .prefix(let field, _), .box(let field, _, _, _, _): return field
        }
    }
}

/// A comparison operator of an index condition.
package enum IndexComparison: String, Sendable, Hashable {
    case equal = "="
    case notEqual = "<>"
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
}

/// A value in the index: numbers (INT64, DOUBLE, TIMESTAMP) compare as numbers, everything else
/// as text.
package enum IndexValue: Sendable, Hashable {
    case number(Double)
    case text(String)
}

extension RecordStoreTransaction {
    /// The zone, then its records (a store whose statements cost no round trips).
    package func recordTexts(key: DatabaseKey, zoneName: String, names: [String]) async throws -> (zone: StoredZone?, records: [String: StoredRecordText]) {
        guard let zone = try await zone(key: key, name: zoneName) else { return (nil, [:]) }
        return (zone, try await recordTexts(zone: zone.id, names: names))
    }
}
