// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The ubiquity containers a process may use and where they live on disk: the Linux
/// counterpart of Apple's `com.apple.developer.ubiquity-container-identifiers` entitlement.
///
/// Containers are declared in code (``declare(_:)``, ``init(declaring:environment:)``) and/or in
/// the `UBIQUITY_CONTAINERS` environment variable (comma-separated). Code declarations come
/// first; the first declared container is the default, used when an identifier is `nil`.
///
/// Each container is a directory `containersDirectory/<directoryName>/` (dots become `~`, as in
/// `~/Library/Mobile Documents` on macOS) holding `Documents/` for user-visible documents; the
/// rest of the container is its data area. Both are created (mode 0700) on first use.
///
/// Unlike Apple's API, a container is usable without a signed-in account: documents then stay
/// on this machine until an account is added.
public struct UbiquityContainers: Sendable, Equatable {
    /// The environment variable that declares containers: comma-separated identifiers.
    public static let environmentVariable = "UBIQUITY_CONTAINERS"
    /// The name of the user-visible documents folder inside every container.
    public static let documentsDirectoryName = "Documents"

    /// Where containers are kept (`paths.containersDirectory`).
    public let paths: UbiquityPaths
    /// The declared containers, without duplicates, in declaration order; the first is the default.
    public let identifiers: [ContainerIdentifier]
    /// `UBIQUITY_CONTAINERS` entries skipped because they are invalid (only the lenient ``shared``
    /// value skips them; mentioned in error messages).
    let ignoredEntries: [String]

    /// Exactly the given containers, kept under `paths`.
    public init(paths: UbiquityPaths = UbiquityPaths(), identifiers: [ContainerIdentifier]) {
        self.init(paths: paths, identifiers: identifiers, ignoredEntries: [])
    }

    /// The containers declared by `identifiers` followed by those in `UBIQUITY_CONTAINERS`, kept
    /// under the paths of the same `environment`. Throws `invalidArgument` naming the first
    /// invalid identifier (and `UBIQUITY_CONTAINERS` when it came from there).
    public init(declaring identifiers: [String] = [],
                environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        var declared = try identifiers.map(ContainerIdentifier.init)
        let parsed = Self.parseDeclarations(environment[Self.environmentVariable] ?? "")
        if let (entry, error) = parsed.invalid.first {
            throw UbiquityError(.invalidArgument, "\(Self.environmentVariable) entry '\(entry)': \(error.message)")
        }
        declared += parsed.valid
        self.init(paths: UbiquityPaths(environment: environment), identifiers: declared, ignoredEntries: [])
    }

    init(paths: UbiquityPaths, identifiers: [ContainerIdentifier], ignoredEntries: [String]) {
        var unique: [ContainerIdentifier] = []
        for identifier in identifiers where !unique.contains(identifier) { unique.append(identifier) }
        self.paths = paths
        self.identifiers = unique
        self.ignoredEntries = ignoredEntries
    }

    /// The default container: the first declared one, or nil when none is declared.
    public var defaultIdentifier: ContainerIdentifier? { identifiers.first }

    /// Splits a `UBIQUITY_CONTAINERS` value at commas (blanks around entries and empty entries are
    /// ignored) into valid identifiers and invalid entries with the reason.
    public static func parseDeclarations(_ value: String)
        -> (valid: [ContainerIdentifier], invalid: [(entry: String, error: UbiquityError)]) {
        var valid: [ContainerIdentifier] = []
        var invalid: [(entry: String, error: UbiquityError)] = []
        for part in value.split(separator: ",") {
            let entry = part.trimmingCharacters(in: .whitespaces)
            if entry.isEmpty { continue }
            do {
                valid.append(try ContainerIdentifier(entry))
            } catch let error as UbiquityError {
                invalid.append((entry, error))
            } catch {
                invalid.append((entry, UbiquityError(.invalidArgument, "\(error)")))
            }
        }
        return (valid, invalid)
    }

    /// The declared container `identifier` names (`nil`: the default). Throws `invalidArgument`
    /// for a malformed identifier and `unknownContainer` for one that is not declared.
    public func identifier(for identifier: String?) throws -> ContainerIdentifier {
        guard let identifier else {
            guard let first = identifiers.first else {
                throw UbiquityError(.unknownContainer, "no ubiquity container is declared, so there is no default container; "
                                    + Self.howToDeclare + ignoredNote)
            }
            return first
        }
        let parsed = try ContainerIdentifier(identifier)
        guard identifiers.contains(parsed) else {
            let declared = identifiers.isEmpty
                ? "no container is declared"
                : "declared: " + identifiers.enumerated().map { $0.offset == 0 ? "\($0.element) (default)" : "\($0.element)" }
                    .joined(separator: ", ")
            throw UbiquityError(.unknownContainer, "container '\(parsed)' is not declared by this process (\(declared)); "
                                + Self.howToDeclare + ignoredNote)
        }
        return parsed
    }

    /// Apple's spelling: the container's directory, created on first use, or nil when the
    /// identifier is malformed or not declared or the directory cannot be created. Logs nothing;
    /// use ``containerURL(for:)`` to learn why.
    public func url(forUbiquityContainerIdentifier identifier: String?) -> URL? {
        try? containerURL(for: identifier)
    }

    /// The directory of the container `identifier` names (`nil`: the default), with its
    /// `Documents` folder created (mode 0700) if missing.
    public func containerURL(for identifier: String? = nil) throws -> URL {
        let container = location(of: try self.identifier(for: identifier))
        try UbiquityPaths.ensureDirectory(container)
        try UbiquityPaths.ensureDirectory(container.appendingPathComponent(Self.documentsDirectoryName, isDirectory: true))
        return container
    }

    /// The user-visible `Documents` folder of the container `identifier` names (`nil`: the
    /// default), created on first use.
    public func documentsURL(for identifier: String? = nil) throws -> URL {
        try containerURL(for: identifier).appendingPathComponent(Self.documentsDirectoryName, isDirectory: true)
    }

    /// Where the container `identifier` lives, whether or not it is declared or exists; creates nothing.
    public func location(of identifier: ContainerIdentifier) -> URL {
        paths.containersDirectory.appendingPathComponent(identifier.directoryName, isDirectory: true)
    }

    static let howToDeclare = "declare containers in the \(environmentVariable) environment variable "
        + "(comma-separated, e.g. \(environmentVariable)=iCloud.com.example.Notes) or with UbiquityContainers.declare(_:)"

    private var ignoredNote: String {
        ignoredEntries.isEmpty ? ""
            : "; invalid \(Self.environmentVariable) entries were ignored: " + ignoredEntries.map { "'\($0)'" }.joined(separator: ", ")
    }
}
