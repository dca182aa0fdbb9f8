// SPDX-License-Identifier: Apache-2.0
import UbiquityCore
import UbiquityWire

/// The schema of one environment of a container: its record types (fields, indexes and
/// public-database permissions) and its named security roles.
///
/// In development a type or field is added just in time by the first save that uses it
/// (`RecordTypeSchema.justInTime`); production changes only by `ubiq admin schema deploy`.
package struct ContainerSchema: Sendable, Hashable {
    /// The record types, by name.
    package var recordTypes: [String: RecordTypeSchema]
    /// The named security roles (the built-in `_world`, `_icloud`, `_creator` are not listed).
    package var roles: Set<String>

    /// Makes a schema.
    package init(recordTypes: [String: RecordTypeSchema] = [:], roles: Set<String> = []) {
        self.recordTypes = recordTypes
        self.roles = roles
    }
}

/// One record type: its fields and who may create, read and write its records in the public
/// database.
package struct RecordTypeSchema: Sendable, Hashable {
    /// The type's name.
    package var name: String
    /// The fields, by name.
    package var fields: [String: SchemaField]
    /// The permissions of each role that has any (a role absent has none).
    package var permissions: [String: SchemaPermissions]

    /// Makes a record type.
    package init(name: String, fields: [String: SchemaField] = [:], permissions: [String: SchemaPermissions] = RecordTypeSchema.defaultPermissions) {
        self.name = name
        self.fields = fields
        self.permissions = permissions
    }

    /// Checks a record type's name: 1–255 ASCII letters, digits, `_` and `.`.
    package static func validate(name: String) throws {
        guard !name.isEmpty, name.utf8.count <= 255,
              name.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "." }) else {
            throw UbiquityError(.invalidArgument, "record type \(name.debugDescription): expected 1 to 255 ASCII letters, digits, '_' and '.'")
        }
    }

    /// Checks a field's name: 1–255 ASCII letters, digits and `_`, starting with a letter or `_`,
    /// not with `___` (system fields).
    package static func validate(fieldName name: String) throws {
        guard let first = name.unicodeScalars.first, name.utf8.count <= 255, !name.hasPrefix("___"),
              ("a"..."z").contains(first) || ("A"..."Z").contains(first) || first == "_",
              name.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }) else {
            throw UbiquityError(.invalidArgument, "field \(name.debugDescription): expected 1 to 255 ASCII letters, digits and '_', starting with a letter (not ___)")
        }
    }

    /// CloudKit's defaults for a new type: `_world` reads, `_icloud` creates, `_creator` reads
    /// and writes.
    package static let defaultPermissions: [String: SchemaPermissions] = [
        SecurityRole.world: [.read], SecurityRole.icloud: [.create], SecurityRole.creator: [.read, .write],
    ]
}

/// A field of a record type and its indexes.
package struct SchemaField: Sendable, Hashable {
    /// The field's name.
    package var name: String
    /// The wire type tag (`STRING`, `INT64_LIST`, …).
    package var type: String
    /// Filters may use the field.
    package var queryable: Bool
    /// Sorts may use the field.
    package var sortable: Bool
    /// Token comparators (`CONTAINS_ALL_TOKENS`, `CONTAINS_ANY_TOKENS`) may use the field; only
    /// for `STRING` and `STRING_LIST`.
    package var searchable: Bool
    /// The type tag this field was first given from a value sent without `type`, in
    /// development; nil when its type was declared or sent. While it equals ``type`` the type is
    /// a guess from the JSON's shape (an integer could be a TIMESTAMP or a DOUBLE, a string
    /// BYTES), which the first value sent with a type it can be read as replaces (``settled(as:)``).
    /// Records saved before keep the earlier tag in the store and are answered with ``type``.
    package var guess: String?

    /// Makes a field.
    package init(name: String, type: String, queryable: Bool, sortable: Bool, searchable: Bool, guess: String? = nil) {
        self.name = name
        self.type = type
        self.queryable = queryable
        self.sortable = sortable
        self.searchable = searchable
        self.guess = guess
    }

    /// A field created just in time in development: queryable and sortable when its type can be
    /// indexed, and searchable when it holds text — every query that worked before schemas
    /// existed still works. `guessed`: the type comes from a value sent without one, and is
    /// ``isGuess`` when the JSON could be read as another type too (``guessTags``).
    package static func justInTime(name: String, type: String, guessed: Bool = false) -> SchemaField {
        let indexed = canBeIndexed(type: type)
        return SchemaField(name: name, type: type, queryable: indexed, sortable: indexed, searchable: canBeSearchable(type: type),
                           guess: guessed && guessTags[type] != nil ? type : nil)
    }

    /// The tags a value sent without `type` gets from its JSON shape that another type reads the
    /// same JSON as, and those types: an integer is an INT64 or a TIMESTAMP or a DOUBLE, a number
    /// with a fraction a DOUBLE or a TIMESTAMP, a string a STRING or BYTES (Base64).
    package static let guessTags: [String: Set<String>] = [
        "INT64": ["TIMESTAMP", "DOUBLE"], "DOUBLE": ["TIMESTAMP"], "STRING": ["BYTES"],
        "INT64_LIST": ["TIMESTAMP_LIST", "DOUBLE_LIST"], "DOUBLE_LIST": ["TIMESTAMP_LIST"], "STRING_LIST": ["BYTES_LIST"],
    ]

    /// The wider guess an untyped value the guessed type cannot hold makes: an integer field
    /// given a number with a fraction becomes a DOUBLE.
    package static let wideningTags: [String: String] = ["INT64": "DOUBLE", "INT64_LIST": "DOUBLE_LIST"]

    /// Whether the type is still a guess (see ``guess``).
    package var isGuess: Bool { guess != nil && guess == type }

    /// The field with its type settled as `tag` (sent with a value), when it is a guess that
    /// `tag` can replace, with the index flags a field of `tag` has; nil otherwise (a value sent
    /// with the guessed type itself leaves the guess as it is: records saved before may hold
    /// values of a narrower guess, an INT64 widened to DOUBLE, still answered in the type).
    package func settled(as tag: String) -> SchemaField? {
        guard isGuess, let guess, tag != type, Self.guessTags[type]?.contains(tag) ?? false else { return nil }
        var field = SchemaField.justInTime(name: name, type: tag)
        field.guess = guess
        return field
    }

    /// The field widened for an untyped value (its JSON's tag `tag`) the guessed type cannot
    /// hold (``wideningTags``), still a guess; nil when it is not a guess or `tag` is not wider.
    package func widened(to tag: String) -> SchemaField? {
        guard isGuess, Self.wideningTags[type] == tag else { return nil }
        return SchemaField.justInTime(name: name, type: tag, guessed: true)
    }

    /// Whether filters and sorts may use a field of this type: not bytes ("Data fields aren't
    /// searchable", Apple's `CKRecord`) nor assets. The stores keep no index rows for them
    /// (`RecordIndexEntry`), whatever a deployed schema says.
    package static func canBeIndexed(type: String) -> Bool {
        !["BYTES", "BYTES_LIST", "ENCRYPTED_BYTES", "ASSETID", "ASSETID_LIST", "ASSET", "ASSET_LIST"].contains(type)
    }

    /// Whether a field of this type may be searchable (`STRING`, `STRING_LIST`).
    package static func canBeSearchable(type: String) -> Bool { type == "STRING" || type == "STRING_LIST" }
}

/// What a role may do with a record type's records in the public database. `write` includes
/// `read`, as in CloudKit.
package struct SchemaPermissions: OptionSet, Sendable, Hashable {
    /// The bits.
    package var rawValue: Int
    /// Makes permissions from their bits.
    package init(rawValue: Int) { self.rawValue = rawValue }

    /// Save new records.
    package static let create = SchemaPermissions(rawValue: 1)
    /// Fetch and query records.
    package static let read = SchemaPermissions(rawValue: 2)
    /// Change and delete existing records (and read them).
    package static let write = SchemaPermissions(rawValue: 4)

    /// The names, in the order CloudKit lists them (`create`, `read`, `write`).
    package var names: [String] {
        [(SchemaPermissions.create, "create"), (.read, "read"), (.write, "write")].filter { contains($0.0) }.map(\.1)
    }
}

/// The built-in security roles of the public database.
package enum SecurityRole {
    /// Anyone with the container's API token, signed in or not (read only).
    package static let world = "_world"
    /// Any signed-in user.
    package static let icloud = "_icloud"
    /// The user who created the record (applies to reading and writing existing records).
    package static let creator = "_creator"
    /// The built-in roles.
    package static let builtIn: [String] = [world, icloud, creator]

    /// Checks a named role's name: 1–64 letters, digits and `_`, starting with a letter (names
    /// starting with `_` are the built-in roles').
    package static func validate(name: String) throws {
        guard let first = name.unicodeScalars.first, ("a"..."z").contains(first) || ("A"..."Z").contains(first), name.utf8.count <= 64,
              name.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }) else {
            throw UbiquityError(.invalidArgument, "role \(name.debugDescription): expected 1 to 64 letters, digits and '_', starting with a letter (or one of \(builtIn.joined(separator: ", ")))")
        }
    }
}

extension ContainerSchema {
    /// The schema as JSON (`ubiq admin schema show --json`): `{"roles": [...], "recordTypes":
    /// [{"name", "fields": [{"name", "type", "queryable", "sortable", "searchable"}],
    /// "permissions": {"_world": ["read"], …}}]}`, sorted by name.
    package var json: JSONValue {
        .object([
            "roles": .array(roles.sorted().map { .string($0) }),
            "recordTypes": .array(recordTypes.values.sorted(by: { $0.name < $1.name }).map { type in
                .object([
                    "name": .string(type.name),
                    "fields": .array(type.fields.values.sorted(by: { $0.name < $1.name }).map { field in
                        .object(["name": .string(field.name), "type": .string(field.type), "queryable": .bool(field.queryable),
                                 "sortable": .bool(field.sortable), "searchable": .bool(field.searchable)])
                    }),
                    "permissions": .object(type.permissions.mapValues { .array($0.names.map { .string($0) }) }),
                ])
            }),
        ])
    }
}
