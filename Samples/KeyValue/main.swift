// SPDX-License-Identifier: Apache-2.0
// KeyValue: a port of Apple's iCloudKeyValue sample (NSUbiquitousKeyValueStore): every device
// writes a key of its own, all share one key, and every change notification is printed.
//
//   KeyValue [--container ID] [--device NAME]
//
// The store is that of --container (default: the process's default container, as
// `KeyValueStore.default` picks it). --device names this device's key `device.NAME` (default:
// the host name). At start it registers for the did-change-externally notification, calls
// `synchronize()` (as Apple's sample does at launch), then prints `ready: N keys`.
// Commands, one per line on stdin:
//   set VALUE      set this device's key (device.NAME) to VALUE
//   shared VALUE   set the shared key (shared) to VALUE
//   show           print every key as `KEY = VALUE`, sorted, then `end`
//   quit           exit (end of input does the same)
// Each notification prints `changed (REASON): KEY = VALUE, …` (a removed key as `KEY removed`),
// REASON being serverChange, initialSyncChange, quotaViolationChange or accountChange.
import Foundation
import Ubiquity

/// Prints one line on stdout at once (lines from the notification thread never interleave).
enum Output {
    static let lock = NSLock()
    static func line(_ text: String) {
        lock.lock()
        defer { lock.unlock() }
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }
}

var container: String?
var device = ProcessInfo.processInfo.hostName
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--container", "--device":
        guard let value = arguments.popFirst() else {
            FileHandle.standardError.write(Data("KeyValue: \(argument) needs a value\n".utf8))
            exit(64)
        }
        if argument == "--container" { container = value } else { device = value }
    case "--help", "-h":
        Output.line("usage: KeyValue [--container ID] [--device NAME]\ncommands on stdin: set VALUE | shared VALUE | show | quit")
        exit(0)
    default:
        FileHandle.standardError.write(Data("KeyValue: unknown argument '\(argument)'\n".utf8))
        exit(64)
    }
}

/// The sample's loop, in a function so that the notification observer captures local values.
func runSample(container: String?, device: String) -> Int32 {
    let store: KeyValueStore
    do {
        store = try container.map { try KeyValueStore(containerIdentifier: $0) } ?? .default
    } catch {
        FileHandle.standardError.write(Data("KeyValue: \(error)\n".utf8))
        return 1
    }
    let deviceKey = "device." + device
    let sharedKey = "shared"

    /// `KEY = VALUE` for each key (`KEY removed` when it has no value).
    @Sendable func describe(_ keys: [String]) -> String {
        keys.sorted().map { key in store.value(forKey: key).map { "\(key) = \($0)" } ?? "\(key) removed" }.joined(separator: ", ")
    }

    // As Apple's sample: observe the store's notification, then synchronize at launch.
    let observer = NotificationCenter.default.addObserver(forName: KeyValueStore.didChangeExternallyNotification, object: store,
                                                          queue: nil) { notification in
        guard let change = KeyValueStore.Change(notification) else { return }
        Output.line("changed (\(change.reason)): \(describe(change.changedKeys))")
    }
    defer { NotificationCenter.default.removeObserver(observer) }
    store.synchronize()
    Output.line("ready: \(store.values.count) keys")

    while let line = readLine() {
        let (command, rest) = line.firstIndex(of: " ").map { (String(line[..<$0]), String(line[line.index(after: $0)...])) } ?? (line, "")
        switch command {
        case "set", "shared":
            let key = command == "set" ? deviceKey : sharedKey
            if store.set(rest, forKey: key) {
                Output.line("set: \(key) = \"\(rest)\"")
            } else {
                FileHandle.standardError.write(Data("KeyValue: cannot set \(key)\n".utf8))
            }
        case "show":
            for (key, value) in store.values.sorted(by: { $0.key < $1.key }) { Output.line("\(key) = \(value)") }
            Output.line("end")
        case "quit":
            return 0
        case "":
            continue
        default:
            FileHandle.standardError.write(Data("KeyValue: unknown command '\(command)' (set VALUE | shared VALUE | show | quit)\n".utf8))
        }
    }
    return 0
}

exit(runSample(container: container, device: device))
