// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity

/// `ubiq kv get|set|remove|list|watch`: a container's iCloud key-value store on this machine,
/// through the library's `KeyValueStore` (the daemon's sync carries it to other devices).
struct KeyValueCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kv",
        abstract: "Read, set and watch a container's key-value store (NSUbiquitousKeyValueStore).",
        discussion: """
            Works on the local store of the container ($XDG_STATE_HOME/ubiquity/kvs/<container>.sqlite), \
            as an app's KeyValueStore does; the daemon syncs it with the server. Keys are at most \
            64 bytes in UTF-8; a store holds at most 1024 keys and 1 MB.

            Exit codes: 0 success; 1 failure (no such key for get; over the quota; the file \
            cannot be written); 64 bad usage (a key over 64 bytes, a value that is not of its --type).

            Examples:
              ubiq kv set theme blue
              ubiq kv set volume 0.8 --type double
              ubiq kv set recent '["a.txt","b.txt"]' --type json
              ubiq kv get theme
              ubiq kv list --json
              ubiq kv watch --container iCloud.com.example.Notes
            """,
        subcommands: [KeyValueGet.self, KeyValueSet.self, KeyValueRemove.self, KeyValueList.self, KeyValueWatch.self]
    )
}

/// The options of every `ubiq kv` subcommand.
struct KeyValueOptions: ParsableArguments {
    @Option(help: "The container whose store to use.")
    var container: String = KeyValueStore.fallbackContainerIdentifier

    @Flag(help: "Print JSON, one object per line.")
    var json = false

    func validate() throws {
        do {
            _ = try ContainerIdentifier(container)
        } catch let error as UbiquityError {
            throw ValidationError("--container: \(error.message)")
        }
    }

    func openStore() throws -> KeyValueStore {
        try KeyValueStore(containerIdentifier: container)
    }

    /// Checks a key argument (exit 64 with the reason).
    static func check(key: String) throws {
        if let problem = KeyValueLimits.problem(withKey: key) { throw ValidationError("KEY: \(problem)") }
    }

    /// A value as plain JSON (numbers, strings, arrays, objects; data as a base64 string).
    static func jsonValue(_ value: KeyValueStore.Value) -> String {
        switch value {
        case .string(let string): return CLI.jsonString(string)
        case .data(let data): return CLI.jsonString(data.base64EncodedString())
        case .array(let values): return "[" + values.map(jsonValue).joined(separator: ",") + "]"
        case .dictionary(let values):
            return "{" + values.sorted { $0.key < $1.key }.map { CLI.jsonString($0.key) + ":" + jsonValue($0.value) }.joined(separator: ",") + "}"
        case .integer(let integer): return String(integer)
        case .double(let double): return String(double)
        case .bool(let bool): return bool ? "true" : "false"
        }
    }

    /// The `--type` name of a value.
    static func typeName(_ value: KeyValueStore.Value) -> String {
        switch value {
        case .string: return "string"
        case .data: return "data"
        case .array: return "array"
        case .dictionary: return "dictionary"
        case .integer: return "int"
        case .double: return "double"
        case .bool: return "bool"
        }
    }

    /// One line for a value: `{"key","type","value"}` with --json, else `KEY = VALUE`.
    static func line(key: String, value: KeyValueStore.Value, json: Bool) -> String {
        if json {
            return "{\"key\":\(CLI.jsonString(key)),\"type\":\(CLI.jsonString(typeName(value))),\"value\":\(jsonValue(value))}"
        }
        return "\(key) = \(plain(value))"
    }

    /// A value for reading: a string as it is, data as base64, the rest as JSON.
    static func plain(_ value: KeyValueStore.Value) -> String {
        switch value {
        case .string(let string): return string
        default: return jsonValue(value)
        }
    }
}

/// `ubiq kv get KEY`.
struct KeyValueGet: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get", abstract: "Print a key's value (exit 1 when it has none).",
        discussion: """
            A string prints as it is, data as base64, other values as JSON; --json prints \
            {"key":…,"type":…,"value":…}.

            Examples:
              ubiq kv get theme
              ubiq kv get recent --json --container iCloud.com.example.Notes
            """)

    @OptionGroup var options: KeyValueOptions
    @Argument(help: "The key.") var key: String

    func validate() throws { try KeyValueOptions.check(key: key) }

    func run() throws {
        try CLI.run("kv get") {
            let store = try options.openStore()
            guard let value = store.value(forKey: key) else {
                throw UbiquityError(.notFound, "no value for key '\(key)' in \(options.container)")
            }
            CLI.printLine(options.json ? KeyValueOptions.line(key: key, value: value, json: true) : KeyValueOptions.plain(value))
        }
    }
}

/// `ubiq kv set KEY VALUE [--type …]`.
struct KeyValueSet: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Set a key's value.",
        discussion: """
            --type: string (default), int (64-bit), double, bool (true/false/yes/no/1/0), data \
            (base64) or json (any JSON but null: objects become dictionaries, arrays arrays, \
            whole numbers ints).

            Examples:
              ubiq kv set theme blue
              ubiq kv set launches 3 --type int
              ubiq kv set settings '{"sound":true,"volume":0.8}' --type json
            """)

    @OptionGroup var options: KeyValueOptions
    @Argument(help: "The key (at most 64 bytes in UTF-8).") var key: String
    @Argument(help: "The value, read as --type says.") var value: String
    @Option(help: "string, int, double, bool, data or json.") var type: String = "string"

    func validate() throws {
        try KeyValueOptions.check(key: key)
        _ = try parsed()
    }

    /// The value argument read as `--type` says (a ValidationError says why not).
    func parsed() throws -> KeyValueStore.Value {
        switch type {
        case "string": return .string(value)
        case "int", "integer":
            guard let integer = Int64(value.trimmingCharacters(in: .whitespaces)) else {
                throw ValidationError("VALUE '\(value)': expected a whole number from \(Int64.min) to \(Int64.max) (--type int)")
            }
            return .integer(integer)
        case "double":
            guard let double = Double(value.trimmingCharacters(in: .whitespaces)), double.isFinite else {
                throw ValidationError("VALUE '\(value)': expected a finite number such as 0.5 or 1e3 (--type double)")
            }
            return .double(double)
        case "bool":
            switch value.lowercased() {
            case "true", "yes", "1": return .bool(true)
            case "false", "no", "0": return .bool(false)
            default: throw ValidationError("VALUE '\(value)': expected true or false (--type bool)")
            }
        case "data":
            guard let data = Data(base64Encoded: value) else {
                throw ValidationError("VALUE: expected base64 (--type data), e.g. aGVsbG8=")
            }
            return .data(data)
        case "json":
            let object: Any
            do {
                object = try JSONSerialization.jsonObject(with: Data(value.utf8), options: [.fragmentsAllowed])
            } catch {
                throw ValidationError("VALUE: not valid JSON (--type json): \(value.prefix(80))")
            }
            guard let converted = Self.value(fromJSON: object) else {
                throw ValidationError("VALUE: JSON null (or a null inside) cannot be stored; use `ubiq kv remove` to remove a key")
            }
            return converted
        default:
            throw ValidationError("--type '\(type)': expected string, int, double, bool, data or json")
        }
    }

    /// A JSON object's value: numbers that are whole become integers.
    static func value(fromJSON object: Any) -> KeyValueStore.Value? {
        switch object {
        case is NSNull: return nil
        case let string as String: return .string(string)
        case let bool as Bool where Swift.type(of: object) == Bool.self: return .bool(bool)
        case let number as NSNumber:
            if String(cString: number.objCType) == "c" || String(cString: number.objCType) == "B" { return .bool(number.boolValue) }
            let double = number.doubleValue
            if double.rounded() == double, abs(double) < 9.0e15 { return .integer(number.int64Value) }
            return .double(double)
        case let array as [Any]:
            var values: [KeyValueStore.Value] = []
            for element in array {
                guard let value = value(fromJSON: element) else { return nil }
                values.append(value)
            }
            return .array(values)
        case let dictionary as [String: Any]:
            var values: [String: KeyValueStore.Value] = [:]
            for (key, element) in dictionary {
                guard let value = value(fromJSON: element) else { return nil }
                values[key] = value
            }
            return .dictionary(values)
        default:
            return nil
        }
    }

    func run() throws {
        try CLI.run("kv set") {
            let store = try options.openStore()
            let value = try parsed()
            try store.setValue(value, forKey: key)
            if options.json { CLI.printLine(KeyValueOptions.line(key: key, value: value, json: true)) }
        }
    }
}

/// `ubiq kv remove KEY`.
struct KeyValueRemove: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Remove a key (nothing happens if it has no value).",
        discussion: """
            Examples:
              ubiq kv remove theme
            """)

    @OptionGroup var options: KeyValueOptions
    @Argument(help: "The key.") var key: String

    func validate() throws { try KeyValueOptions.check(key: key) }

    func run() throws {
        try CLI.run("kv remove") {
            try options.openStore().setValue(nil, forKey: key)
        }
    }
}

/// `ubiq kv list`.
struct KeyValueList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "Print every key and value, sorted by key.",
        discussion: """
            One `KEY = VALUE` line per key; with --json one {"key":…,"type":…,"value":…} object per line.

            Examples:
              ubiq kv list --json
            """)

    @OptionGroup var options: KeyValueOptions

    func run() throws {
        try CLI.run("kv list") {
            let values = try options.openStore().values
            for (key, value) in values.sorted(by: { $0.key < $1.key }) {
                CLI.printLine(KeyValueOptions.line(key: key, value: value, json: options.json))
            }
        }
    }
}

/// `ubiq kv watch`.
struct KeyValueWatch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch", abstract: "Print every change notification of the store as a line, until interrupted.",
        discussion: """
            Prints a ready line first, then one line per didChangeExternallyNotification: the \
            reason (serverChange, initialSyncChange, quotaViolationChange, accountChange) and the \
            keys; with --json {"reason":"serverChange","reasonCode":0,"keys":[…]}.

            Examples:
              ubiq kv watch --json --container iCloud.com.example.Notes
            """)

    @OptionGroup var options: KeyValueOptions

    func run() async throws {
        let store: KeyValueStore
        do {
            store = try options.openStore()
        } catch {
            throw CLI.report(error, command: "kv watch")
        }
        let changes = store.changes()
        let termination = TerminationSignals()
        CLI.printLine(options.json ? "{\"ready\":true,\"container\":\(CLI.jsonString(options.container))}"
                                   : "ready: watching \(options.container)")
        let json = options.json
        let watcher = Task {
            for await change in changes {
                if json {
                    let keys = "[" + change.changedKeys.map(CLI.jsonString).joined(separator: ",") + "]"
                    CLI.printLine("{\"reason\":\(CLI.jsonString(change.reason.description)),\"reasonCode\":\(change.reason.rawValue),\"keys\":\(keys)}")
                } else {
                    CLI.printLine("\(change.reason): \(change.changedKeys.joined(separator: ", "))")
                }
            }
        }
        await termination.wait { watcher.cancel() }
        withExtendedLifetime(store) {}
    }
}
