// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

/// One finished `ubiq` process, with stdout and stderr kept apart.
package struct UbiqRun: CustomStringConvertible {
    package let arguments: [String]
    package let status: Int32
    package let stdout: String
    package let stderr: String

    package var description: String {
        "ubiq \(arguments.joined(separator: " ")) → \(status)\nstdout: \(stdout)\nstderr: \(stderr)"
    }

    /// stdout decoded as `T` (strict types: a JSON number never passes for a Bool).
    package func decode<T: Decodable>(_ type: T.Type = T.self) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(stdout.utf8))
    }

    /// The keys of the JSON object on stdout.
    package func keys() throws -> Set<String> {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any], "\(self)")
        return Set(object.keys)
    }
}

extension Device {
    /// Runs `ubiq` to completion in `directory` (the test process's own when nil), with this
    /// device's environment plus `extraEnvironment`. `UBIQUITY_CONTAINERS` of the test process is
    /// never inherited. stdout and stderr go to files, so a chatty child can never block on a pipe;
    /// `input` (when given) is its standard input, from a file.
    package func run(_ arguments: [String], in directory: URL? = nil, extraEnvironment: [String: String] = [:],
             input: String? = nil, timeout: Double = 60) throws -> UbiqRun {
        let io = root.appendingPathComponent("cli-io", isDirectory: true)
        try FileManager.default.createDirectory(at: io, withIntermediateDirectories: true)
        let tag = UUID().uuidString
        let outURL = io.appendingPathComponent(tag + ".out")
        let errURL = io.appendingPathComponent(tag + ".err")
        defer {
            try? FileManager.default.removeItem(at: outURL)
            try? FileManager.default.removeItem(at: errURL)
        }
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)

        var environment = self.environment
        environment.removeValue(forKey: "UBIQUITY_CONTAINERS")
        environment.merge(extraEnvironment) { $1 }

        let process = Process()
        process.executableURL = launcher ?? Binaries.ubiq
        process.arguments = launcher == nil ? arguments : [Binaries.ubiq.path] + arguments
        process.environment = environment
        if let directory { process.currentDirectoryURL = directory }
        if let input {
            let inURL = io.appendingPathComponent(tag + ".in")
            try Data(input.utf8).write(to: inURL)
            process.standardInput = try FileHandle(forReadingFrom: inURL)
            try? FileManager.default.removeItem(at: inURL)
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        process.standardOutput = out
        process.standardError = err
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        do { try process.run() } catch {
            try? out.close()
            try? err.close()
            throw error
        }
        try? out.close()
        try? err.close()
        var status = Int32(-1)
        if exited.wait(timeout: .now() + timeout) == .timedOut {
            kill(process.processIdentifier, SIGKILL)
            exited.wait()
        } else {
            status = process.terminationStatus
        }
        func text(_ url: URL) -> String {
            String(decoding: (try? Data(contentsOf: url)) ?? Data(), as: UTF8.self)
        }
        return UbiqRun(arguments: arguments, status: status, stdout: text(outURL), stderr: text(errURL))
    }

    /// The text of the file at `url`, or nil when it cannot be read.
    package func contents(_ url: URL) -> String? {
        (try? Data(contentsOf: url)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// `$XDG_DATA_HOME` of this device.
    package var dataHome: URL { URL(fileURLWithPath: environment["XDG_DATA_HOME"]!, isDirectory: true) }
}
