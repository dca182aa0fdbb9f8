// SPDX-License-Identifier: Apache-2.0
import UbiquityCore
import UbiquityWire

/// The schema file of `ubiq admin schema export|import`, close to the `.ckdb` language of
/// Apple's `cktool`:
///
/// ```
/// DEFINE SCHEMA
///
///     CREATE ROLE Moderator;
///
///     RECORD TYPE Note (
///         "title"    STRING QUERYABLE SORTABLE SEARCHABLE,
///         "tags"     LIST<STRING> QUERYABLE SEARCHABLE,
///         "body"     ASSET,
///         GRANT READ TO "_world",
///         GRANT CREATE TO "_icloud",
///         GRANT READ, WRITE TO "_creator",
///         GRANT WRITE TO "Moderator"
///     );
/// ```
///
/// Names are `"quoted"` (a `"` inside doubled) or bare (letters, digits, `_`). Field types are
/// `STRING`, `INT64`, `DOUBLE`, `TIMESTAMP`, `BYTES`, `REFERENCE`, `ASSET`, `LOCATION` and
/// `LIST<T>` of those (the wire tags, `STRING_LIST`, `ASSETID`, are accepted too). A field's
/// indexes follow its type; a role's permissions are `CREATE`, `READ`, `WRITE` (`WRITE` includes
/// `READ`). Keywords are case-insensitive; `//` and `--` start comments. `DEFINE SCHEMA` is
/// optional. System fields (`___createTime`, …) are skipped on import: they are always present.
extension ContainerSchema {
    /// The schema as a schema file (types, fields and roles sorted by name).
    package var text: String {
        var lines = ["DEFINE SCHEMA"]
        if !roles.isEmpty {
            lines.append("")
            for role in roles.sorted() { lines.append("    CREATE ROLE \(ContainerSchema.quoted(role));") }
        }
        for type in recordTypes.values.sorted(by: { $0.name < $1.name }) {
            lines.append("")
            var items: [String] = []
            let width = type.fields.keys.map { ContainerSchema.quoted($0).count }.max() ?? 0
            for field in type.fields.values.sorted(by: { $0.name < $1.name }) {
                var item = ContainerSchema.quoted(field.name).padding(toLength: width, withPad: " ", startingAt: 0) + " " + ContainerSchema.fileType(field.type)
                // (a bytes field made queryable just in time before bytes were left unindexed
                // is written without it, so the text deploys again)
                let indexed = SchemaField.canBeIndexed(type: field.type)
                if field.queryable && indexed { item += " QUERYABLE" }
                if field.sortable && indexed { item += " SORTABLE" }
                if field.searchable { item += " SEARCHABLE" }
                items.append(item)
            }
            let roleOrder = SecurityRole.builtIn + type.permissions.keys.filter { !SecurityRole.builtIn.contains($0) }.sorted()
            for role in roleOrder {
                guard let permissions = type.permissions[role], !permissions.isEmpty else { continue }
                items.append("GRANT \(permissions.names.map { $0.uppercased() }.joined(separator: ", ")) TO \(ContainerSchema.quoted(role))")
            }
            lines.append("    RECORD TYPE \(ContainerSchema.quoted(type.name)) (")
            for (index, item) in items.enumerated() { lines.append("        " + item + (index == items.count - 1 ? "" : ",")) }
            lines.append("    );")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func quoted(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }

    /// `LIST<STRING>` for `STRING_LIST`, `ASSET` for `ASSETID`.
    static func fileType(_ tag: String) -> String {
        func scalar(_ tag: String) -> String { tag == "ASSETID" ? "ASSET" : tag }
        return tag.hasSuffix("_LIST") ? "LIST<\(scalar(String(tag.dropLast(5))))>" : scalar(tag)
    }

    /// Parses a schema file; `invalidArgument` naming the line and what was expected.
    package init(text: String) throws {
        var parser = SchemaFileParser(text: text)
        self = try parser.parse()
    }
}

/// A recursive-descent parser of schema files.
struct SchemaFileParser {
    enum Token: Equatable {
        case word(String)
        case name(String)
        case symbol(Character)
    }

    var tokens: [(token: Token, line: Int)] = []
    var position = 0
    var lexError: UbiquityError?

    init(text: String) {
        var line = 1
        var characters = Array(text)[...]
        while let character = characters.first {
            if character == "\n" { line += 1; characters.removeFirst(); continue }
            if character.isWhitespace { characters.removeFirst(); continue }
            if characters.starts(with: "//") || characters.starts(with: "--") {
                while let next = characters.first, next != "\n" { characters.removeFirst() }
                continue
            }
            if character == "\"" {
                characters.removeFirst()
                var name = ""
                var closed = false
                while let next = characters.first {
                    characters.removeFirst()
                    if next == "\"" {
                        if characters.first == "\"" { characters.removeFirst(); name.append("\""); continue }
                        closed = true
                        break
                    }
                    if next == "\n" { break }
                    name.append(next)
                }
                guard closed else {
                    lexError = UbiquityError(.invalidArgument, "line \(line): a quoted name is not closed before the end of the line")
                    return
                }
                tokens.append((.name(name), line))
                continue
            }
            if character.isLetter || character.isNumber || character == "_" {
                var word = ""
                while let next = characters.first, next.isLetter || next.isNumber || next == "_" { word.append(next); characters.removeFirst() }
                tokens.append((.word(word), line))
                continue
            }
            if "(),;<>".contains(character) {
                tokens.append((.symbol(character), line))
                characters.removeFirst()
                continue
            }
            lexError = UbiquityError(.invalidArgument, "line \(line): unexpected character \(String(character).debugDescription)")
            return
        }
    }

    var line: Int { position < tokens.count ? tokens[position].line : (tokens.last?.line ?? 1) }

    func failure(_ expected: String) -> UbiquityError {
        let found: String
        if position < tokens.count {
            switch tokens[position].token {
            case .word(let word): found = word
            case .name(let name): found = ContainerSchema.quoted(name)
            case .symbol(let symbol): found = "'\(symbol)'"
            }
        } else {
            found = "the end of the file"
        }
        return UbiquityError(.invalidArgument, "line \(line): expected \(expected), found \(found)")
    }

    /// Consumes a keyword (case-insensitive) when it comes next.
    mutating func accept(_ keyword: String) -> Bool {
        guard position < tokens.count, case .word(let word) = tokens[position].token, word.uppercased() == keyword else { return false }
        position += 1
        return true
    }

    mutating func acceptSymbol(_ symbol: Character) -> Bool {
        guard position < tokens.count, tokens[position].token == .symbol(symbol) else { return false }
        position += 1
        return true
    }

    mutating func expect(_ keyword: String) throws {
        guard accept(keyword) else { throw failure(keyword) }
    }

    mutating func expect(_ symbol: Character, _ what: String) throws {
        guard acceptSymbol(symbol) else { throw failure(what) }
    }

    mutating func name(_ what: String) throws -> String {
        guard position < tokens.count else { throw failure(what) }
        switch tokens[position].token {
        case .word(let word), .name(let word):
            guard !word.isEmpty else { throw failure(what) }
            position += 1
            return word
        case .symbol:
            throw failure(what)
        }
    }

    mutating func parse() throws -> ContainerSchema {
        if let lexError { throw lexError }
        var schema = ContainerSchema()
        if accept("DEFINE") { try expect("SCHEMA") }
        while position < tokens.count {
            if accept("CREATE") {
                try expect("ROLE")
                let startLine = line
                let role = try name("a role name")
                do { try SecurityRole.validate(name: role) } catch let error as UbiquityError {
                    throw UbiquityError(.invalidArgument, "line \(startLine): \(error.message)")
                }
                schema.roles.insert(role)
                try expect(";", "';' after CREATE ROLE \(role)")
            } else if accept("RECORD") {
                try expect("TYPE")
                let typeLine = line
                let type = try recordType()
                guard schema.recordTypes[type.name] == nil else {
                    throw UbiquityError(.invalidArgument, "line \(typeLine): record type \(type.name) is defined twice")
                }
                schema.recordTypes[type.name] = type
            } else {
                throw failure("RECORD TYPE or CREATE ROLE")
            }
        }
        for type in schema.recordTypes.values {
            for role in type.permissions.keys where !SecurityRole.builtIn.contains(role) && !schema.roles.contains(role) {
                throw UbiquityError(.invalidArgument, "record type \(type.name) grants to role \(role), which the file does not create (add CREATE ROLE \(role);)")
            }
        }
        return schema
    }

    mutating func recordType() throws -> RecordTypeSchema {
        let nameLine = line
        let typeName = try name("a record type name")
        do { try RecordTypeSchema.validate(name: typeName) } catch let error as UbiquityError {
            throw UbiquityError(.invalidArgument, "line \(nameLine): \(error.message)")
        }
        var type = RecordTypeSchema(name: typeName, permissions: [:])
        try expect("(", "'(' after RECORD TYPE \(typeName)")
        if acceptSymbol(")") {
            try expect(";", "';' after the record type")
            return type
        }
        repeat {
            let itemLine = line
            if accept("GRANT") {
                var permissions: SchemaPermissions = []
                repeat {
                    if accept("CREATE") { permissions.insert(.create) } else if accept("READ") { permissions.insert(.read) } else if accept("WRITE") {
                        permissions.insert([.write, .read])
                    } else { throw failure("CREATE, READ or WRITE") }
                } while acceptSymbol(",")
                try expect("TO")
                let role = try name("a role name")
                if role.hasPrefix("_") {
                    guard SecurityRole.builtIn.contains(role) else {
                        throw UbiquityError(.invalidArgument, "line \(itemLine): unknown built-in role \(role); expected \(SecurityRole.builtIn.joined(separator: ", ")) or a named role")
                    }
                    if role == SecurityRole.world, permissions.contains(.create) || permissions.contains(.write) {
                        throw UbiquityError(.invalidArgument, "line \(itemLine): _world may only READ (anyone with the API token, not signed in)")
                    }
                }
                type.permissions[role, default: []].formUnion(permissions)
            } else {
                let fieldName = try name("a field name or GRANT")
                let fieldType = try self.fieldType()
                var field = SchemaField(name: fieldName, type: fieldType, queryable: false, sortable: false, searchable: false)
                while true {
                    let queryable = accept("QUERYABLE")
                    if queryable || accept("SORTABLE") {
                        guard SchemaField.canBeIndexed(type: fieldType) else {
                            throw UbiquityError(.invalidArgument, "line \(itemLine): field \(fieldName) is \(ContainerSchema.fileType(fieldType)); bytes and assets cannot be QUERYABLE or SORTABLE")
                        }
                        if queryable { field.queryable = true } else { field.sortable = true }
                    } else if accept("SEARCHABLE") {
                        guard SchemaField.canBeSearchable(type: fieldType) else {
                            throw UbiquityError(.invalidArgument, "line \(itemLine): field \(fieldName) is \(ContainerSchema.fileType(fieldType)); only STRING and LIST<STRING> fields can be SEARCHABLE")
                        }
                        field.searchable = true
                    } else { break }
                }
                if fieldName.hasPrefix("___") { continue }
                do { try RecordTypeSchema.validate(fieldName: fieldName) } catch let error as UbiquityError {
                    throw UbiquityError(.invalidArgument, "line \(itemLine): \(error.message)")
                }
                guard type.fields[fieldName] == nil else {
                    throw UbiquityError(.invalidArgument, "line \(itemLine): field \(fieldName) of \(typeName) is defined twice")
                }
                type.fields[fieldName] = field
            }
        } while acceptSymbol(",")
        try expect(")", "',' or ')' in RECORD TYPE \(typeName)")
        try expect(";", "';' after the record type")
        return type
    }

    /// A field type, as a wire tag.
    mutating func fieldType() throws -> String {
        let startLine = line
        let word = try name("a field type")
        var tag = word.uppercased()
        if tag == "LIST" {
            try expect("<", "'<' after LIST")
            let element = try name("a list element type").uppercased()
            try expect(">", "'>' after LIST<\(element)")
            tag = element + "_LIST"
        }
        guard let type = WireFieldType(tag: tag), type != .list(nil) else {
            throw UbiquityError(.invalidArgument, "line \(startLine): unknown field type \(word); expected STRING, INT64, DOUBLE, TIMESTAMP, BYTES, REFERENCE, ASSET, LOCATION or LIST<…> of those")
        }
        return type.description
    }
}
