// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity

/// `ubiq container`: where the declared ubiquity containers live.
struct ContainerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "container",
        abstract: "Show the declared ubiquity containers and their directories.",
        discussion: """
            Containers are declared with --container (repeatable) and the UBIQUITY_CONTAINERS \
            environment variable (comma-separated); --container ones come first, and the first \
            declared container is the default. Containers live in $UBIQUITY_HOME/containers or \
            $XDG_DATA_HOME/ubiquity/containers.

            Examples:
              UBIQUITY_CONTAINERS=iCloud.com.example.Notes ubiq container url
              ubiq container url iCloud.com.example.Notes --container iCloud.com.example.Notes --json
              ubiq container list --container iCloud.com.example.Notes
              ubiq container name iCloud.com.example.Notes --set "My Notes" --container iCloud.com.example.Notes
            """,
        subcommands: [URLCommand.self, ListCommand.self, NameCommand.self]
    )

    /// The options every `container` subcommand takes.
    struct Declarations: ParsableArguments {
        @Option(name: .customLong("container"),
                help: ArgumentHelp("Declare a container (repeatable), in addition to UBIQUITY_CONTAINERS.",
                                   valueName: "id"))
        var containers: [String] = []

        @Flag(help: "Print JSON.")
        var json = false

        func validate() throws {
            for container in containers {
                do { _ = try ContainerIdentifier(container) } catch let error as UbiquityError {
                    throw ValidationError("--container: \(error.message)")
                }
            }
        }

        /// The declared containers, or exit 1 with the error on stderr.
        func load() throws -> UbiquityContainers {
            try ContainerCommand.reporting { try UbiquityContainers(declaring: containers) }
        }
    }

    /// One container, as printed with --json.
    struct Entry: Encodable {
        var identifier: String
        var path: String
        var documents: String
        var isDefault: Bool
        /// The declared display name (absent when none is).
        var displayName: String?

        init(_ identifier: ContainerIdentifier, in containers: UbiquityContainers, url: URL? = nil) {
            let location = url ?? containers.location(of: identifier)
            self.identifier = identifier.rawValue
            path = location.path
            documents = location.appendingPathComponent(UbiquityContainers.documentsDirectoryName).path
            isDefault = identifier == containers.defaultIdentifier
            displayName = UbiquityContainers.displayName(ofContainerAt: location)
        }
    }

    /// `ubiq container url [ID]`.
    struct URLCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "url",
            abstract: "Print a container's directory, creating it (and its Documents folder) if missing.",
            discussion: """
                Examples:
                  ubiq container url --container iCloud.com.example.Notes
                  UBIQUITY_CONTAINERS=iCloud.com.example.Notes ubiq container url iCloud.com.example.Notes --json
                """
        )

        @Argument(help: ArgumentHelp("The container identifier (default: the first declared container).",
                                     valueName: "id"))
        var identifier: String?

        @OptionGroup var declarations: Declarations

        func validate() throws {
            guard let identifier else { return }
            do { _ = try ContainerIdentifier(identifier) } catch let error as UbiquityError {
                throw ValidationError(error.message)
            }
        }

        func run() throws {
            let containers = try declarations.load()
            let (resolved, url) = try ContainerCommand.reporting {
                (try containers.identifier(for: identifier), try containers.containerURL(for: identifier))
            }
            if declarations.json {
                try ContainerCommand.printJSON(Entry(resolved, in: containers, url: url))
            } else {
                print(url.path)
            }
        }
    }

    /// `ubiq container list`.
    struct ListCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List the declared containers (the default first) and their directories, creating nothing.",
            discussion: """
                Examples:
                  UBIQUITY_CONTAINERS=iCloud.com.example.Notes,iCloud.com.example.Sketch ubiq container list
                  ubiq container list --container iCloud.com.example.Notes --json
                """
        )

        @OptionGroup var declarations: Declarations

        func run() throws {
            let containers = try declarations.load()
            let entries = containers.identifiers.map { Entry($0, in: containers) }
            if declarations.json {
                try ContainerCommand.printJSON(entries)
                return
            }
            if entries.isEmpty {
                ContainerCommand.printError("no ubiquity container is declared; use --container ID or "
                                            + "\(UbiquityContainers.environmentVariable)=ID[,ID...]")
                return
            }
            for entry in entries {
                let name = entry.displayName.map { " \"\($0)\"" } ?? ""
                print("\(entry.identifier)\(entry.isDefault ? " (default)" : "")\(name)\t\(entry.path)")
            }
        }
    }

    /// `ubiq container name [ID] [--set NAME | --remove]`.
    struct NameCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "name",
            abstract: "Show, set or remove a container's display name (its folder's name in the sync folder).",
            discussion: """
                The counterpart of Apple's NSUbiquitousContainerName: the running daemon names the \
                container's folder in the sync folder after it (on every device of the account); \
                without one, the folder is named after the identifier's last component. Without \
                --set or --remove, prints the name (nothing when none is declared).

                Examples:
                  ubiq container name iCloud.com.example.Notes --set "My Notes" --container iCloud.com.example.Notes
                  UBIQUITY_CONTAINERS=iCloud.com.example.Notes ubiq container name --remove
                """
        )

        @Argument(help: ArgumentHelp("The container identifier (default: the first declared container).",
                                     valueName: "id"))
        var identifier: String?

        @Option(help: ArgumentHelp("Declare this display name.", valueName: "name"))
        var set: String?

        @Flag(help: "Remove the declared display name.")
        var remove = false

        @OptionGroup var declarations: Declarations

        func validate() throws {
            if let identifier {
                do { _ = try ContainerIdentifier(identifier) } catch let error as UbiquityError {
                    throw ValidationError(error.message)
                }
            }
            if set != nil && remove { throw ValidationError("--set and --remove: expected one of them, not both") }
            if let set {
                do { _ = try UbiquityContainers.validatedDisplayName(set) } catch let error as UbiquityError {
                    throw ValidationError("--set: \(error.message)")
                }
            }
        }

        func run() throws {
            let containers = try declarations.load()
            let name: String? = try ContainerCommand.reporting {
                if set != nil || remove { try containers.setDisplayName(set, for: identifier) }
                return try containers.displayName(for: identifier)
            }
            if declarations.json {
                try ContainerCommand.printJSON(["displayName": name])
            } else if let name {
                print(name)
            }
        }
    }

    /// Runs `body` through ``CLI/run(_:_:)``, adding a hint to unknown-container errors.
    static func reporting<T>(_ body: () throws -> T) throws -> T {
        var result: T?
        try CLI.run("container") {
            do {
                result = try body()
            } catch var error as UbiquityError where error.code == .unknownContainer {
                error.message += "; on the command line, --container ID declares one too"
                throw error
            }
        }
        guard let result else { throw ExitCode.failure }
        return result
    }

    static func printJSON(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(value)
        print(String(decoding: data, as: UTF8.self))
    }

    static func printError(_ message: String) {
        FileHandle.standardError.write(Data((message + "\n").utf8))
    }
}
