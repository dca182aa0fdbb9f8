// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

extension UbiquityContainers {
    /// The file in a container's directory (beside `Documents/`, never synced as a document)
    /// that holds what the app declares about the container: `{"name": "…"}`.
    public static let containerInfoFileName = ".ubiquity-container.json"

    /// The longest display name, in UTF-8 bytes (a file name's limit on Linux).
    public static let maximumDisplayNameLength = 255

    /// The Linux counterpart of Apple's `NSUbiquitousContainerName` (an `NSUbiquitousContainers`
    /// entry of the app's `Info.plist`): the name under which the container's documents appear
    /// in the sync folder, as iCloud Drive shows an app's folder by its name. Written into the
    /// container's directory (created on first use), so the daemon, other processes and, through
    /// the account, the other devices use it; `nil` removes it (the folder is then named after
    /// the identifier's last component).
    ///
    /// Throws `invalidArgument` for a name that cannot be a folder name (empty or blank, `.`,
    /// `..`, starting with `.`, containing `/` or NUL, longer than 255 UTF-8 bytes) and
    /// `unknownContainer` for a container that is not declared.
    public func setDisplayName(_ name: String?, for identifier: String? = nil) throws {
        let container = try containerURL(for: identifier)
        let file = container.appendingPathComponent(Self.containerInfoFileName)
        guard let name else {
            do {
                try FileManager.default.removeItem(at: file)
            } catch let error as CocoaError where error.code == .fileNoSuchFile {
                // nothing declared
            } catch {
                throw UbiquityError(.io, "cannot remove the display name of the container at '\(container.path)'", underlying: error)
            }
            return
        }
        let valid = try Self.validatedDisplayName(name)
        do {
            let data = try JSONSerialization.data(withJSONObject: ["name": valid], options: [.sortedKeys])
            try data.write(to: file, options: .atomic)
        } catch {
            throw UbiquityError(.io, "cannot write the display name of the container at '\(container.path)'", underlying: error)
        }
    }

    /// The display name declared for the container `identifier` names (`nil`: the default), or
    /// nil when none is.
    public func displayName(for identifier: String? = nil) throws -> String? {
        Self.displayName(ofContainerAt: location(of: try self.identifier(for: identifier)))
    }

    /// The display name declared in the container directory `directory`, or nil when there is
    /// none or it is not a valid one (a hand-edited file is ignored, never trusted as a path).
    public static func displayName(ofContainerAt directory: URL) -> String? {
        guard let data = try? Data(contentsOf: directory.appendingPathComponent(containerInfoFileName)),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let name = object["name"] as? String else { return nil }
        return try? validatedDisplayName(name)
    }

    /// `name` with surrounding blanks removed, when it can be a folder name of its own at the
    /// top of the sync folder; else `invalidArgument` saying why.
    public static func validatedDisplayName(_ name: String) throws -> String {
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        func invalid(_ why: String) -> UbiquityError {
            UbiquityError(.invalidArgument, "invalid container display name '\(name)': \(why)")
        }
        guard !trimmed.isEmpty else { throw invalid("expected a non-empty name") }
        guard !trimmed.hasPrefix(".") else { throw invalid("it must not start with '.' (a hidden name)") }
        guard !trimmed.contains("/"), !trimmed.utf8.contains(0) else { throw invalid("it must not contain '/' or NUL") }
        guard !trimmed.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw invalid("it must not contain control characters")
        }
        guard trimmed.utf8.count <= maximumDisplayNameLength else {
            throw invalid("longer than \(maximumDisplayNameLength) bytes in UTF-8")
        }
        return trimmed
    }
}
