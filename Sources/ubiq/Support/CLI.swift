// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Logging
import Synchronization
import Ubiquity

/// Shared plumbing of the `ubiq` subcommands.
enum CLI {
    /// Exit code for "a needed service is unavailable" (sysexits EX_UNAVAILABLE).
    static let unavailable: Int32 = 69
    /// Exit code for "timed out" (sysexits EX_TEMPFAIL).
    static let timedOut: Int32 = 75

    /// An absolute path for a command-line argument (relative ones are taken from the current
    /// directory), walked as the kernel walks it, so `link/../x` means what the shell means.
    static func absolutePath(_ argument: String) throws -> String {
        let absolute = argument.hasPrefix("/") ? argument : FileManager.default.currentDirectoryPath + "/" + argument
        return try CanonicalPath.canonicalize(absolute)
    }

    /// Prints `error` on stderr as `ubiq[ COMMAND]: message` and returns its exit code: 75 for a
    /// time-out, 69 when a needed service went away (with pointers to `ubiq daemon` and `ubiq doctor`, since the
    /// library's messages name no commands), 1 otherwise.
    static func report(_ error: any Error, command: String? = nil) -> ExitCode {
        let message: String
        var code = ExitCode.failure
        if let error = error as? UbiquityError {
            message = error.description + (error.code == .serviceUnavailable ? " (`ubiq daemon` runs the daemon; `ubiq doctor` checks the set-up)" : "")
            if error.code == .timedOut { code = ExitCode(timedOut) }
            if error.code == .serviceUnavailable { code = ExitCode(unavailable) }
        } else {
            message = "\(error)"
        }
        FileHandle.standardError.write(Data("ubiq\(command.map { " " + $0 } ?? ""): \(message)\n".utf8))
        return code
    }

    /// Runs a command's body: usage errors and explicit exit codes pass through; any other error
    /// is printed (``report(_:command:)``) and becomes the exit code.
    static func run(_ command: String, _ body: () throws -> Void) throws {
        do { try body() } catch let error as ExitCode { throw error } catch let error as ValidationError { throw error } catch {
            throw report(error, command: command)
        }
    }

    /// Bootstraps logging to stderr at `level` (executables only).
    static func bootstrapLogging(level: Logger.Level) {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }

    /// A process-wide lock for stdout, so that JSON lines from several threads never interleave.
    static let outputLock = Mutex(())

    /// Writes one line to stdout and flushes it.
    static func printLine(_ line: String) {
        outputLock.withLock { _ in
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
        }
    }

    /// Writes `text` to stdout as it is (no line break added).
    static func printRaw(_ text: String) {
        outputLock.withLock { _ in
            FileHandle.standardOutput.write(Data(text.utf8))
        }
    }

    /// Encodes a JSON object with the keys in the given order (values: String, Int, Bool, nil).
    static func jsonObject(_ pairs: [(String, Any?)]) -> String {
        let body = pairs.map { key, value -> String in
            let encoded: String
            switch value {
            case let string as String: encoded = jsonString(string)
            case let int as Int: encoded = String(int)
            case let int as UInt64: encoded = String(int)
            case let bool as Bool: encoded = bool ? "true" : "false"
            case let double as Double: encoded = String(double)
            default: encoded = "null"
            }
            return jsonString(key) + ":" + encoded
        }
        return "{" + body.joined(separator: ",") + "}"
    }

    /// A JSON string literal.
    static func jsonString(_ string: String) -> String {
        // mostly nothing to escape (paths, names): the bytes as they are (`ubiq query --watch`
        // prints every item of a burst of 100,000 new files)
        if !string.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            return "\"" + string + "\""
        }
        var out = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 { out += String(format: "\\u%04x", scalar.value) } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out + "\""
    }

}

/// Keeps signal sources alive for the life of the process.
enum SignalSources {
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []
    private static let lock = NSLock()
    static func keep(_ new: [any DispatchSourceSignal]) {
        lock.lock()
        sources += new
        lock.unlock()
    }
}

/// `--log-level` for commands that log.
struct LoggingOptions: ParsableArguments {
    @Option(help: "Log level on stderr: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "notice"

    var level: Logger.Level { Logger.Level(rawValue: logLevel) ?? .notice }

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical (got '\(logLevel)')")
        }
    }
}
