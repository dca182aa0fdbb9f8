// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity
import UbiquityWire
import UbiquityCloudKit

/// `ubiq records save`: saves records given as CloudKit record dictionaries.
struct RecordsSave: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "save",
        abstract: "Save records given as CloudKit record dictionaries (from --json or stdin).",
        discussion: """
            Reads one record dictionary, an array of them, or {"records":[…]} from --json TEXT or \
            standard input. Field types may be left out ({"value":30} is INT64, {"value":1.5} \
            DOUBLE); a record without recordName gets a UUID; a record without zoneID goes to \
            --zone. A record with a recordChangeTag is saved only if the server still has that \
            version (--policy if-unchanged, the default); changed-keys and all-keys overwrite \
            whatever the server has. Prints the saved records as the server returns them.

            Examples:
              ubiq records save --json '{"recordType":"Artist","recordName":"mei","fields":{"name":{"value":"Mei Chen"},"age":{"value":30}}}'
              ubiq records fetch mei --json | jq -c '.fields.age.value = 31' | ubiq records save
              ubiq records save --policy changed-keys --zone Notes < notes.json
            """
    )

    @Option(help: "The records as JSON (default: read standard input).")
    var json: String?

    @Option(help: "if-unchanged (update only the version fetched), changed-keys or all-keys.")
    var policy: String = "if-unchanged"

    @Flag(inversion: .prefixedNo, help: "Apply each request all or nothing (custom zones only).")
    var atomic = true

    @Flag(name: .customLong("print-json"), help: "Print the saved records as JSON, one per line.")
    var printJSON = false

    @OptionGroup var connection: CloudKitConnectionOptions

    var savePolicy: ModifyRecordsOperation.RecordSavePolicy? {
        ["if-unchanged": .ifServerRecordUnchanged, "changed-keys": .changedKeys, "all-keys": .allKeys][policy]
    }

    func validate() throws {
        guard savePolicy != nil else { throw ValidationError("--policy '\(policy)': expected if-unchanged, changed-keys or all-keys") }
        if json == nil, isatty(FileHandle.standardInput.fileDescriptor) != 0 {
            throw ValidationError("no records: give --json TEXT or pipe record dictionaries on standard input")
        }
    }

    func run() async throws {
        do {
            let database = try connection.makeDatabase()
            let input = json.map { Data($0.utf8) } ?? FileHandle.standardInput.readDataToEndOfFile()
            let records = try Record.fromCloudKitJSON(input, zoneID: connection.zoneID)
            guard !records.isEmpty else { throw ValidationError("no records in the input") }
            let (saves, _) = try await database.modifyRecords(saving: records, deleting: [], savePolicy: savePolicy ?? .ifServerRecordUnchanged,
                                                              atomically: atomic)
            var failed: CloudKitError?
            for record in records {
                switch saves[record.recordID] {
                case .success(let saved)?:
                    if printJSON { RecordsCLI.print(saved, json: true) } else { CLI.printLine("saved \(saved.recordType) \(saved.recordID.recordName)\(saved.recordChangeTag.map { " (tag \($0))" } ?? "")") }
                case .failure(let error)?:
                    let error = RecordsCLI.cloudKitError(error)
                    failed = failed ?? error
                    FileHandle.standardError.write(Data("ubiq records save: \(record.recordID.recordName): \(RecordsCLI.message(for: error))\n".utf8))
                case nil:
                    FileHandle.standardError.write(Data("ubiq records save: \(record.recordID.recordName): no answer from the server\n".utf8))
                    failed = failed ?? CloudKitError(.internalError, "no answer")
                }
            }
            if let failed { throw RecordsCLI.exitCode(for: failed) }
        } catch let error as ValidationError {
            throw error
        } catch {
            throw RecordsCLI.fail(error, command: "save")
        }
    }
}

extension RecordsCLI {
    /// Any error as a CloudKit error (for the per-item results, whose type is `any Error`).
    static func cloudKitError(_ error: any Error) -> CloudKitError {
        (error as? CloudKitError) ?? CloudKitError(.internalError, "\(error)", underlying: error)
    }
}

/// `ubiq records fetch NAME…`.
struct RecordsFetch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Fetch records by name.",
        discussion: """
            Prints each record (with --json, its record dictionary on one line). A name that does \
            not exist is reported on stderr and the exit code is 1.

            Examples:
              ubiq records fetch mei
              ubiq records fetch mei chen --json --keys name,age
              ubiq records fetch note-1 --zone Notes --database private
            """
    )

    @Argument(help: "Record names.")
    var names: [String]

    @Option(help: "Fetch only these fields (comma-separated).")
    var keys: String?

    @Flag(help: "Print record dictionaries, one per line.")
    var json = false

    @OptionGroup var connection: CloudKitConnectionOptions

    func validate() throws {
        if names.isEmpty { throw ValidationError("give at least one record name") }
    }

    func run() async throws {
        do {
            let database = try connection.makeDatabase()
            let ids = RecordsCLI.ids(names, zone: connection.zoneID)
            let results = try await database.records(for: ids, desiredKeys: RecordsCLI.keys(keys))
            var failed: CloudKitError?
            for id in ids {
                switch results[id] {
                case .success(let record)?: RecordsCLI.print(record, json: json)
                case .failure(let error)?:
                    let error = RecordsCLI.cloudKitError(error)
                    failed = failed ?? error
                    let text = error.code == .unknownItem ? "not found" : RecordsCLI.message(for: error)
                    FileHandle.standardError.write(Data("ubiq records fetch: \(id.recordName): \(text)\n".utf8))
                case nil: break
                }
            }
            if let failed { throw RecordsCLI.exitCode(for: failed) }
        } catch {
            throw RecordsCLI.fail(error, command: "fetch")
        }
    }
}

/// `ubiq records delete NAME…`.
struct RecordsDelete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete records by name.",
        discussion: """
            Deletes whatever version the server has. Prints each name deleted.

            Examples:
              ubiq records delete mei
              ubiq records delete note-1 note-2 --zone Notes --database private
            """
    )

    @Argument(help: "Record names.")
    var names: [String]

    @OptionGroup var connection: CloudKitConnectionOptions

    func validate() throws {
        if names.isEmpty { throw ValidationError("give at least one record name") }
    }

    func run() async throws {
        do {
            let database = try connection.makeDatabase()
            let ids = RecordsCLI.ids(names, zone: connection.zoneID)
            let (_, deletes) = try await database.modifyRecords(saving: [], deleting: ids, atomically: false)
            var failed: CloudKitError?
            for id in ids {
                switch deletes[id] {
                case .success?: CLI.printLine("deleted \(id.recordName)")
                case .failure(let error)?:
                    let error = RecordsCLI.cloudKitError(error)
                    failed = failed ?? error
                    FileHandle.standardError.write(Data("ubiq records delete: \(id.recordName): \(RecordsCLI.message(for: error))\n".utf8))
                case nil: break
                }
            }
            if let failed { throw RecordsCLI.exitCode(for: failed) }
        } catch {
            throw RecordsCLI.fail(error, command: "delete")
        }
    }
}

/// `ubiq records query TYPE [PREDICATE [ARGS…]]`.
struct RecordsQuery: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Find records of a type with an NSPredicate format string.",
        discussion: """
            PREDICATE is what CKQuery takes (default TRUEPREDICATE): comparisons (== != < <= > \
            >=), BEGINSWITH, IN {…}, list CONTAINS value, ANY list BEGINSWITH, self CONTAINS \
            'words', distanceToLocation:fromLocation:(field, %@) < km, joined with AND (CloudKit \
            cannot OR). Keys are field names or creationDate, modificationDate, recordName, \
            creatorUserRecordID. ARGS fill %d (integer), %f (number), %K (field name) and %@, in \
            order; a %@ argument is a string unless written int:N, double:X, date:ISO-8601, \
            ref:NAME, loc:LAT,LON, or a JSON array ["a","b"].

            One page of results unless --all, which follows the server's continuation markers \
            (--page-size records per request); --limit caps the total. A malformed predicate \
            names the column (exit code 64).

            Examples:
              ubiq records query Artist
              ubiq records query Artist 'name BEGINSWITH %@ AND age > %d' Mei 30 --sort age:desc
              ubiq records query Note 'tags CONTAINS %@' work --zone Notes --database private --all --json
              ubiq records query Place 'distanceToLocation:fromLocation:(location, %@) < %f' loc:37.33,-122.03 5
            """
    )

    @Argument(help: "The record type.")
    var recordType: String

    @Argument(help: "The predicate (default TRUEPREDICATE).")
    var predicate: String = "TRUEPREDICATE"

    @Argument(help: "Values for %@, %K, %d and %f, in order.")
    var arguments: [String] = []

    @Option(help: "Sort by KEY or KEY:desc (repeatable).")
    var sort: [String] = []

    @Option(help: "Print at most this many records.")
    var limit: Int?

    @Flag(help: "Follow continuation markers to get every match.")
    var all = false

    @Option(name: .customLong("page-size"), help: "Records per request (at most 200; default: the server's).")
    var pageSize: Int?

    @Option(help: "Fetch only these fields (comma-separated).")
    var keys: String?

    @Flag(name: .customLong("all-zones"), help: "Search every zone instead of --zone.")
    var allZones = false

    @Flag(help: "Print record dictionaries, one per line.")
    var json = false

    @OptionGroup var connection: CloudKitConnectionOptions

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit \(limit): expected a number ≥ 1") }
        if let pageSize, !(1...200).contains(pageSize) { throw ValidationError("--page-size \(pageSize): expected 1 to 200") }
        for text in sort { _ = try Self.sortDescriptor(text) }
    }

    static func sortDescriptor(_ text: String) throws -> CKQuery.SortDescriptor {
        var key = text
        var ascending = true
        if let colon = text.lastIndex(of: ":") {
            let direction = text[text.index(after: colon)...].lowercased()
            guard direction == "desc" || direction == "asc" else { throw ValidationError("--sort '\(text)': expected KEY, KEY:asc or KEY:desc") }
            ascending = direction == "asc"
            key = String(text[..<colon])
        }
        guard !key.isEmpty else { throw ValidationError("--sort '\(text)': expected KEY, KEY:asc or KEY:desc") }
        return CKQuery.SortDescriptor(key: key, ascending: ascending)
    }

    /// Converts the command-line arguments by the predicate's specifiers.
    static func convert(_ arguments: [String], for format: String) throws -> [any Sendable] {
        let kinds = try CKQuery.Predicate.formatSpecifiers(in: format)
        guard kinds.count == arguments.count else {
            throw CloudKitError(.invalidArguments,
                                "the predicate has \(kinds.count) substitution\(kinds.count == 1 ? "" : "s") (%@ %K %d %f) but \(arguments.count) argument\(arguments.count == 1 ? " was" : "s were") given")
        }
        return try zip(kinds, arguments).enumerated().map { position, pair -> any Sendable in
            let (kind, argument) = pair
            func bad(_ expected: String) -> CloudKitError {
                CloudKitError(.invalidArguments, "argument \(position + 1) '\(argument)': expected \(expected) for %\(kind)")
            }
            switch kind.last {
            case "@": return try objectArgument(argument, bad: bad)
            case "K": return argument
            case "f":
                guard let value = Double(argument) else { throw bad("a number") }
                return value
            default:
                guard let value = Int64(argument) else { throw bad("an integer") }
                return value
            }
        }
    }

    /// A `%@` argument: a string, or `int:`, `double:`, `date:`, `ref:`, `loc:`, `str:`, or a JSON array.
    static func objectArgument(_ text: String, bad: (String) -> CloudKitError) throws -> any Sendable {
        func after(_ prefix: String) -> String? { text.hasPrefix(prefix) ? String(text.dropFirst(prefix.count)) : nil }
        if let rest = after("str:") { return rest }
        if let rest = after("int:") {
            guard let value = Int64(rest) else { throw bad("an integer after int:") }
            return value
        }
        if let rest = after("double:") {
            guard let value = Double(rest) else { throw bad("a number after double:") }
            return value
        }
        if let rest = after("date:") {
            guard let date = try? Date(rest, strategy: .iso8601) else { throw bad("an ISO 8601 date such as 2024-05-01T12:00:00Z after date:") }
            return date
        }
        if let rest = after("ref:") { return Record.ID(recordName: rest) }
        if let rest = after("loc:") {
            let parts = rest.split(separator: ",").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
            guard parts.count == 2 else { throw bad("LATITUDE,LONGITUDE after loc:") }
            return Location(latitude: parts[0], longitude: parts[1])
        }
        if text.hasPrefix("["), case .array(let array)? = try? JSONValue.parse(Data(text.utf8)) {
            var values: [RecordValue] = []
            for element in array {
                switch element {
                case .string(let string): values.append(.string(string))
                case .integer(let number): values.append(.int64(number))
                case .number(let number): values.append(.double(number))
                default: throw bad("a JSON array of strings or numbers")
                }
            }
            return RecordValue.list(values)
        }
        return text
    }

    func run() async throws {
        let query: CKQuery
        do {
            let predicate = try CKQuery.Predicate(format: self.predicate, argumentArray: try Self.convert(arguments, for: self.predicate))
            var built = CKQuery(recordType: recordType, predicate: predicate)
            built.sortDescriptors = try sort.map(Self.sortDescriptor)
            query = built
        } catch let error as CloudKitError {
            FileHandle.standardError.write(Data("ubiq records query: \(error.reason)\n".utf8))
            throw ExitCode(64)
        }
        do {
            let database = try connection.makeDatabase()
            let zone: RecordZone.ID? = allZones ? nil : connection.zoneID
            let desired = RecordsCLI.keys(keys)
            var printed = 0
            var failed: CloudKitError?
            let perPage = pageSize ?? 200
            func nextPageSize() -> Int {
                if let limit { return min(limit - printed, perPage) }
                return pageSize ?? QueryOperation.maximumResults
            }
            var (matches, cursor) = try await database.records(matching: query, inZoneWith: zone, desiredKeys: desired, resultsLimit: nextPageSize())
            while true {
                for (id, result) in matches {
                    if let limit, printed >= limit { break }
                    switch result {
                    case .success(let record):
                        RecordsCLI.print(record, json: json)
                        printed += 1
                    case .failure(let error):
                        let error = RecordsCLI.cloudKitError(error)
                        failed = failed ?? error
                        FileHandle.standardError.write(Data("ubiq records query: \(id.recordName): \(RecordsCLI.message(for: error))\n".utf8))
                    }
                }
                guard all, let next = cursor, limit.map({ printed < $0 }) ?? true else { break }
                (matches, cursor) = try await database.records(continuingMatchFrom: next, desiredKeys: desired, resultsLimit: nextPageSize())
            }
            if !json, !all, cursor != nil, limit.map({ printed < $0 }) ?? true {
                FileHandle.standardError.write(Data("ubiq records query: more records match; add --all to get them all\n".utf8))
            }
            if let failed { throw RecordsCLI.exitCode(for: failed) }
        } catch {
            throw RecordsCLI.fail(error, command: "query")
        }
    }
}
