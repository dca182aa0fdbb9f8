// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Logging
import Synchronization
import Ubiquity
import UbiquityCore

/// The app containers' subfolders of the sync folder: one symbolic link per app container at
/// the top of the folder, `FOLDER/<name>` → the container's `Documents/`, as iCloud Drive shows
/// each app's documents in a folder of its own.
///
/// The drive's ``SyncEngine`` neither syncs nor follows these links: its local scan leaves out
/// a top-level name that is one of them (by name *and* target: a user's own link of the same
/// name is synced as usual), and before a remote item is written under such a name
/// (``makeRoom(for:)``) the link moves aside to a disambiguated name, so the user's content
/// always wins the name and nothing is written into an app's container through a link.
///
/// Names (``names(for:current:displayNames:isTaken:)``, pure): the container's display name
/// when one is declared (Apple's `NSUbiquitousContainerName`;
/// ``UbiquityContainers/setDisplayName(_:for:)``), else the identifier's last component
/// (`iCloud.com.example.Notes` → `Notes`); when a user's item or another app has it,
/// `Notes (com.example.Notes)`, then `Notes (com.example.Notes) 2`, …. A link keeps its name
/// while it stays free and its display name stays the same. Links are local to this device:
/// they are never uploaded.
package final class AppFolderLinks: Sendable {
    /// One link.
    package struct Link: Sendable, Hashable {
        /// The app container.
        package var identifier: String
        /// The link's name at the top of the sync folder.
        package var name: String
        /// What it points to: the container's `Documents/` (absolute).
        package var target: String
    }

    /// The sync folder (absolute, symbolic links resolved).
    package let folder: String
    let logger: Logger
    /// The links placed, by name.
    let state = Mutex<[String: Link]>([:])
    /// The display names last given to ``place(_:displayNames:)``, by identifier.
    let displayNames = Mutex<[String: String]>([:])

    /// The links of `folder` (made if missing). Links a previous run left there, to a
    /// container's `Documents/` in `containersDirectory`, are taken as links at once, so the
    /// drive's first pass never takes them for the user's.
    package init(folder: String, containersDirectory: String? = nil, logger: Logger) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let canonical = try CanonicalPath.canonicalize(folder, resolveLast: true)
        self.folder = canonical
        self.logger = logger
        guard let containersDirectory else { return }
        let containers = (try? CanonicalPath.canonicalize(containersDirectory, resolveLast: true)) ?? containersDirectory
        var found: [String: Link] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: canonical)) ?? [] {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: canonical + "/" + name),
                  target.hasPrefix(containers + "/"), target.hasSuffix("/" + UbiquityContainers.documentsDirectoryName) else { continue }
            let directory = String(target.dropFirst(containers.count + 1).dropLast(UbiquityContainers.documentsDirectoryName.count + 1))
            guard !directory.contains("/") else { continue }
            let identifier = directory.replacingOccurrences(of: "~", with: ".")
            found[name] = Link(identifier: identifier, name: name, target: target)
        }
        state.withLock { $0 = found }
    }

    /// The links placed so far.
    package var links: [Link] { state.withLock { Array($0.values) }.sorted { $0.name < $1.name } }

    /// The name an app container's folder gets when nothing else has it: its display name when
    /// one is declared, else the identifier's last component (`iCloud.com.example.Notes` → `Notes`).
    package static func preferredName(of identifier: String, displayName: String? = nil) -> String {
        displayName ?? String(identifier.split(separator: ".").last ?? Substring(identifier))
    }

    /// The disambiguated name: `Notes (com.example.Notes)`, then with ` 2`, ` 3`, … (`attempt`
    /// counts from 1).
    package static func disambiguatedName(of identifier: String, displayName: String? = nil, attempt: Int) -> String {
        let qualifier = identifier.hasPrefix("iCloud.") ? String(identifier.dropFirst("iCloud.".count)) : identifier
        let base = "\(preferredName(of: identifier, displayName: displayName)) (\(qualifier))"
        return attempt <= 1 ? base : "\(base) \(attempt)"
    }

    /// Whether `name` is the preferred or a disambiguated name of the container (so a link of
    /// that name keeps it; after a display name changes, it does not).
    static func isName(_ name: String, of identifier: String, displayName: String?) -> Bool {
        let preferred = preferredName(of: identifier, displayName: displayName)
        return name == preferred || name.hasPrefix(disambiguatedName(of: identifier, displayName: displayName, attempt: 1))
    }

    /// The name of each container's link: its current name (`current`, by identifier) while
    /// that is not taken by something else and still comes from the container's display name
    /// (`displayNames`, by identifier; absent: none declared), else the preferred name, else the
    /// disambiguated ones; `isTaken` says whether a name is used by something that is not this
    /// container's link (a user's item). Identifiers are served in order, so the result is
    /// deterministic.
    package static func names(for identifiers: [String], current: [String: String], displayNames: [String: String] = [:],
                             isTaken: (String) -> Bool) -> [String: String] {
        var result: [String: String] = [:]
        var used = Set<String>()
        func free(_ name: String) -> Bool { !used.contains(name) && !isTaken(name) }
        // links keep their names first, so a new app never takes an older app's name
        for identifier in identifiers.sorted() {
            if let name = current[identifier], free(name), isName(name, of: identifier, displayName: displayNames[identifier]) {
                result[identifier] = name
                used.insert(name)
            }
        }
        for identifier in identifiers.sorted() where result[identifier] == nil {
            let displayName = displayNames[identifier]
            var name = preferredName(of: identifier, displayName: displayName)
            var attempt = 1
            while !free(name) {
                name = disambiguatedName(of: identifier, displayName: displayName, attempt: attempt)
                attempt += 1
            }
            result[identifier] = name
            used.insert(name)
        }
        return result
    }

    /// Whether `relativePath` (relative to the folder) is one of the links: a top-level
    /// symbolic link with a link's name pointing at its container.
    package func isLink(_ relativePath: String) -> Bool {
        guard !relativePath.utf8.contains(UInt8(ascii: "/")), let link = state.withLock({ $0[relativePath] }) else { return false }
        return Self.pointsAt(folder + "/" + relativePath, link.target)
    }

    /// Leaves the links out of a scan's result (the drive engine's local pass).
    func removeLinks(from items: inout [String: LocalItem]) {
        for name in state.withLock({ Array($0.keys) }) where items[name]?.stat.kind == .symlink && isLink(name) {
            items[name] = nil
        }
    }

    /// A remote item of the drive is about to be written at `relativePath`: when its first
    /// component is a link, the link moves aside to a free disambiguated name (the user's
    /// item takes the name; the app's documents stay reachable under the new one).
    package func makeRoom(for relativePath: String) {
        guard let first = relativePath.split(separator: "/").first.map(String.init), isLink(first) else { return }
        let displayNames = self.displayNames.withLock { $0 }
        state.withLock { links in
            guard let link = links[first] else { return }
            let displayName = displayNames[link.identifier]
            var attempt = 1
            var name = Self.disambiguatedName(of: link.identifier, displayName: displayName, attempt: attempt)
            while links[name] != nil || FileStamp.of(folder + "/" + name) != nil || name == first {
                attempt += 1
                name = Self.disambiguatedName(of: link.identifier, displayName: displayName, attempt: attempt)
            }
            guard rename(folder + "/" + first, folder + "/" + name) == 0 else {
                logger.error("cannot move an app's folder link aside for a synced item of the same name",
                             metadata: ["ubiquity.path": "\(first)", "ubiquity.error": "\(String(cString: strerror(errno)))"])
                return
            }
            links[first] = nil
            links[name] = Link(identifier: link.identifier, name: name, target: link.target)
            logger.notice("an app's folder moved aside for a synced item of the same name",
                          metadata: ["ubiquity.container": "\(link.identifier)", "ubiquity.path": "\(name)"])
        }
    }

    /// Places one link per container (`targets`: identifier → its `Documents/`), named after
    /// the containers' `displayNames` (by identifier; absent: none declared), keeping the names
    /// links have and never replacing anything that is not a link of ours; removes the links of
    /// containers no longer given. Returns the links.
    @discardableResult
    package func place(_ targets: [String: String], displayNames: [String: String] = [:]) -> [Link] {
        self.displayNames.withLock { $0 = displayNames }
        return state.withLock { links in
            let current = Dictionary(links.values.map { ($0.identifier, $0.name) }, uniquingKeysWith: { first, _ in first })
            let names = Self.names(for: Array(targets.keys), current: current, displayNames: displayNames) { name in
                guard FileStamp.of(folder + "/" + name) != nil else { return false }
                // ours (any container's, about to be renamed or removed) does not count as taken
                return !(links[name].map { Self.pointsAt(folder + "/" + name, $0.target) } ?? false)
                    && !targets.values.contains { Self.pointsAt(folder + "/" + name, $0) }
            }
            // remove links that move or go away, then make the new ones
            for (name, link) in links where names[link.identifier] != name {
                if Self.pointsAt(folder + "/" + name, link.target) { unlink(folder + "/" + name) }
                links[name] = nil
            }
            for (identifier, name) in names {
                guard let target = targets[identifier] else { continue }
                let path = folder + "/" + name
                if !Self.pointsAt(path, target) {
                    if (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) != nil, targets.values.contains(where: { Self.pointsAt(path, $0) }) {
                        unlink(path)  // another container's link of ours, left from before
                    }
                    guard symlink(target, path) == 0 else {
                        logger.error("cannot make an app's folder in the sync folder",
                                     metadata: ["ubiquity.container": "\(identifier)", "ubiquity.path": "\(path)",
                                                "ubiquity.error": "\(String(cString: strerror(errno)))"])
                        continue
                    }
                }
                links[name] = Link(identifier: identifier, name: name, target: target)
            }
            return links.values.sorted { $0.name < $1.name }
        }
    }

    /// Removes every link (the account stops); returns what they were.
    @discardableResult
    package func removeAll() -> [Link] {
        state.withLock { links in
            let removed = Array(links.values)
            for link in removed where Self.pointsAt(folder + "/" + link.name, link.target) { unlink(folder + "/" + link.name) }
            links = [:]
            return removed.sorted { $0.name < $1.name }
        }
    }

    /// Whether `path` is a symbolic link whose target is `target`.
    static func pointsAt(_ path: String, _ target: String) -> Bool {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) == target
    }
}
