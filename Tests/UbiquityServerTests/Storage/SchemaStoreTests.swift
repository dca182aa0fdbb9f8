// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// The schema primitives of both stores (`SchemaStoreTransaction`), the schema file format and the
/// deployment rules.
@Suite struct SchemaStoreTests {
    static let container = "iCloud.org.example.Schema"

    /// A field's guess is stored and read back, and `updateField` replaces a field's type, index
    /// flags and guess in place (development settling a guessed type).
    @Test(arguments: StoreKind.available)
    func guessesAreKeptAndFieldsUpdated(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            let container = Self.container
            let guessed = SchemaField.justInTime(name: "at", type: "INT64", guessed: true)
            #expect(guessed.guess == "INT64" && guessed.isGuess)
            #expect(SchemaField.justInTime(name: "where", type: "LOCATION", guessed: true).guess == nil)
            try await store.write { tx throws in
                try await tx.schemas().addToSchema(RecordTypeSchema(name: "Event", fields: ["at": guessed, "blob": .justInTime(name: "blob", type: "STRING", guessed: true)]),
                                             container: container, environment: .development)
            }
            let before = try await store.read { tx throws in try await tx.schemas().recordType(container: container, environment: .development, name: "Event") }
            #expect(before?.fields["at"] == guessed)
            let timestamp = try #require(guessed.settled(as: "TIMESTAMP"))
            let bytes = try #require(before?.fields["blob"]?.settled(as: "BYTES"))
            #expect(guessed.settled(as: "STRING") == nil && guessed.settled(as: "INT64") == nil)
            try await store.write { tx throws in
                for field in [timestamp, bytes] {
                    try await tx.schemas().updateField(field, recordType: "Event", container: container, environment: .development)
                }
            }
            let after = try await store.read { tx throws in try await tx.schemas().recordType(container: container, environment: .development, name: "Event") }
            #expect(after?.fields["at"] == SchemaField(name: "at", type: "TIMESTAMP", queryable: true, sortable: true, searchable: false, guess: "INT64"))
            #expect(after?.fields["blob"] == SchemaField(name: "blob", type: "BYTES", queryable: false, sortable: false, searchable: false, guess: "STRING"))
            #expect(after?.fields["at"]?.isGuess == false)
        }
    }

    @Test(arguments: StoreKind.available)
    func typesFieldsIndexesPermissionsAndRoles(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            let container = Self.container
            try await store.write { tx throws in
                let schemas = try tx.schemas()
                try await schemas.addToSchema(RecordTypeSchema(name: "Note", fields: ["title": .justInTime(name: "title", type: "STRING"),
                                                                               "n": .justInTime(name: "n", type: "INT64")]),
                                        container: container, environment: .development)
                // Existing fields and permissions are kept; new fields are added.
                try await schemas.addToSchema(RecordTypeSchema(name: "Note", fields: ["title": .justInTime(name: "title", type: "BYTES"),
                                                                               "when": .justInTime(name: "when", type: "TIMESTAMP")],
                                                         permissions: [SecurityRole.world: [.read, .create]]),
                                        container: container, environment: .development)
                try await schemas.addToSchema(RecordTypeSchema(name: "Empty"), container: container, environment: .development)
                try await schemas.setRoleMember(true, container: container, role: "Moderator", userRecordName: "_a")
                try await schemas.setRoleMember(true, container: container, role: "Editor", userRecordName: "_a")
                try await schemas.setRoleMember(true, container: container, role: "Moderator", userRecordName: "_b")
                try await schemas.setRoleMember(false, container: container, role: "Editor", userRecordName: "_a")
            }
            let (development, production, note, roles, members) = try await store.read { tx throws in
                let schemas = try tx.schemas()
                return await (try schemas.schema(container: container, environment: .development),
                        try schemas.schema(container: container, environment: .production),
                        try schemas.recordType(container: container, environment: .development, name: "Note"),
                        try schemas.roles(container: container, userRecordName: "_a"),
                        try schemas.roleMembers(container: container))
            }
            #expect(development.recordTypes.keys.sorted() == ["Empty", "Note"])
            #expect(development.recordTypes["Empty"]?.fields.isEmpty == true)
            #expect(development.recordTypes["Empty"]?.permissions == RecordTypeSchema.defaultPermissions)
            #expect(note == development.recordTypes["Note"])
            #expect(note?.fields["title"] == SchemaField(name: "title", type: "STRING", queryable: true, sortable: true, searchable: true))
            #expect(note?.fields["n"] == SchemaField(name: "n", type: "INT64", queryable: true, sortable: true, searchable: false))
            #expect(note?.fields["when"]?.type == "TIMESTAMP")
            #expect(note?.permissions == RecordTypeSchema.defaultPermissions)
            #expect(production.recordTypes.isEmpty)
            #expect(roles == ["Moderator"])
            #expect(members == ["Moderator": ["_a", "_b"]])
            // a type and a user's roles in one read (PostgreSQL: one statement), each part alone too
            let combined = try await store.read { tx throws in
                let schemas = try tx.schemas()
                return await (try schemas.recordType(container: container, environment: .development, name: "Note", rolesOf: "_a"),
                              try schemas.recordType(container: container, environment: .development, name: "Note", rolesOf: nil),
                              try schemas.recordType(container: container, environment: .development, name: "Missing", rolesOf: "_b"),
                              try schemas.recordType(container: container, environment: .development, name: "Note", rolesOf: "_nobody"))
            }
            #expect(combined.0.type == note && combined.0.roles == ["Moderator"])
            #expect(combined.1.type == note && combined.1.roles == nil)
            #expect(combined.2.type == nil && combined.2.roles == ["Moderator"])
            #expect(combined.3.type == note && combined.3.roles == [])

            // Replacing a schema replaces everything of that environment only.
            var changed = development
            changed.recordTypes["Note"]?.fields["title"]?.queryable = false
            changed.recordTypes["Note"]?.permissions = ["Moderator": [.read, .write]]
            changed.recordTypes["Empty"] = nil
            changed.roles = ["Moderator"]
            let target = changed
            try await store.write { tx throws in
                try await tx.schemas().replaceSchema(target, container: container, environment: .development)
                try await tx.schemas().replaceSchema(development, container: container, environment: .production)
            }
            let (after, deployed) = try await store.read { tx throws in
                (try await tx.schemas().schema(container: container, environment: .development),
                 try await tx.schemas().schema(container: container, environment: .production))
            }
            #expect(after == changed)
            #expect(deployed == development)
        }
    }

    @Test(arguments: StoreKind.available)
    func deleteDataEmptiesOneEnvironment(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            let development = DatabaseKey(container: Self.container, environment: .development, scope: .private, owner: "_a")
            let production = DatabaseKey(container: Self.container, environment: .production, scope: .private, owner: "_a")
            try await store.write { tx throws in
                for key in [development, production] {
                    let database = try await tx.lockDatabase(key)
                    let zone = try await tx.createZone(database: database.id, name: "z", createdAt: 1)
                    let stamp = WireRecordStamp(timestamp: 1, userRecordName: "_a", deviceID: nil)
                    try await tx.putRecord(StoredRecord(zone: zone.id, recordName: "r", recordType: "Note", changeTag: "1", sequence: 1, deleted: false,
                                                  fields: ["title": .string("x")], created: stamp, modified: stamp))
                }
                try await tx.schemas().deleteData(container: Self.container, environment: .development)
            }
            let (gone, kept) = try await store.read { tx throws in
                let kept = if let production = try await tx.database(production) { try await tx.zones(database: production.id).count } else { Int?.none }
                return (try await tx.database(development), kept)
            }
            #expect(gone == nil)
            #expect(kept == 1)
        }
    }

    @Test func schemaFileRoundTripsAndReportsErrorsByLine() throws {
        let text = """
            DEFINE SCHEMA
                // roles first
                CREATE ROLE Moderator;
                RECORD TYPE Note (
                    "title" STRING QUERYABLE SORTABLE SEARCHABLE,
                    tags LIST<STRING> QUERYABLE,
                    "body" ASSET,
                    "___createTime" TIMESTAMP QUERYABLE,
                    GRANT READ TO "_world",
                    GRANT CREATE TO "_icloud",
                    GRANT READ, WRITE TO "_creator",
                    GRANT WRITE TO Moderator
                );
                record type Empty ();
            """
        let schema = try ContainerSchema(text: text)
        #expect(schema.roles == ["Moderator"])
        #expect(schema.recordTypes["Note"]?.fields["tags"] == SchemaField(name: "tags", type: "STRING_LIST", queryable: true, sortable: false, searchable: false))
        #expect(schema.recordTypes["Note"]?.fields["body"]?.type == "ASSETID")
        #expect(schema.recordTypes["Note"]?.fields["___createTime"] == nil)
        #expect(schema.recordTypes["Note"]?.permissions["Moderator"] == [.read, .write])
        #expect(schema.recordTypes["Note"]?.permissions["_creator"] == [.read, .write])
        #expect(schema.recordTypes["Empty"]?.fields.isEmpty == true)
        #expect(schema.recordTypes["Empty"]?.permissions.isEmpty == true)
        #expect(try ContainerSchema(text: schema.text) == schema)
        #expect(schema.text.contains(#""tags"  LIST<STRING> QUERYABLE"#))

        func message(_ text: String) -> String {
            do {
                _ = try ContainerSchema(text: text)
                return ""
            } catch let error as UbiquityError {
                #expect(error.code == .invalidArgument)
                return error.message
            } catch {
                return "\(error)"
            }
        }
        #expect(message("RECORD TYPE Note (\n  \"n\" INT64 SEARCHABLE\n);").hasPrefix("line 2: field n is INT64; only STRING"))
        #expect(message("RECORD TYPE Note (\n  \"b\" BYTES QUERYABLE\n);").hasPrefix("line 2: field b is BYTES; bytes and assets cannot be QUERYABLE"))
        #expect(message("RECORD TYPE Note (\n  \"a\" ASSET SORTABLE\n);").hasPrefix("line 2: field a is ASSET; bytes and assets cannot be"))
        // a bytes field an older server made queryable just in time is written without it
        var older = schema
        older.recordTypes["Note"]?.fields["blob"] = SchemaField(name: "blob", type: "BYTES", queryable: true, sortable: true, searchable: false)
        #expect(try ContainerSchema(text: older.text).recordTypes["Note"]?.fields["blob"] == SchemaField.justInTime(name: "blob", type: "BYTES"))
        #expect(message("RECORD TYPE Note (\n  \"n\" NUMBER\n);").contains("line 2: unknown field type NUMBER"))
        #expect(message("RECORD TYPE Note ( \"a\" STRING, GRANT WRITE TO \"_world\" );").contains("_world may only READ"))
        #expect(message("RECORD TYPE Note ( GRANT READ TO Ghost );").contains("does not create"))
        #expect(message("RECORD TYPE Note ( \"a\" STRING ) ").contains("expected ';'"))
        #expect(message("TABLE x;").contains("expected RECORD TYPE or CREATE ROLE, found TABLE"))
        #expect(message("RECORD TYPE A (); RECORD TYPE A ();").contains("defined twice"))
    }

    @Test func deploymentRefusesRemovalsAndTypeChanges() throws {
        let production = try ContainerSchema(text: """
            RECORD TYPE Note ( "title" STRING QUERYABLE, "n" INT64, "gone" STRING );
            RECORD TYPE Old ( "x" STRING );
            """)
        let development = try ContainerSchema(text: """
            RECORD TYPE Note ( "title" STRING SORTABLE, "n" DOUBLE, "new" STRING );
            RECORD TYPE Fresh ( "y" STRING );
            """)
        let (_, refusals) = development.deployment(onto: production)
        #expect(refusals.count == 3)
        #expect(refusals.contains { $0.contains("Note.gone") && $0.contains("cannot be removed") })
        #expect(refusals.contains { $0.contains("Note.n is INT64 in production and DOUBLE") })
        #expect(refusals.contains { $0.contains("record type Old") })

        let good = try ContainerSchema(text: """
            RECORD TYPE Note ( "title" STRING SORTABLE, "n" INT64, "gone" STRING, "new" STRING );
            RECORD TYPE Old ( "x" STRING );
            RECORD TYPE Fresh ( "y" STRING );
            """)
        let (deployed, none) = good.deployment(onto: production)
        #expect(none.isEmpty)
        #expect(deployed == good)
        #expect(deployed.recordTypes["Note"]?.fields["title"]?.queryable == false)

        let (_, importRefusals) = production.importing(development)
        #expect(importRefusals.count == 1)
        #expect(importRefusals.first?.contains("Note.n is INT64") == true)
    }
}
