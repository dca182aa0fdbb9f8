// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// Whether the full scan would descend to an item's folder (no folder on the way ignored by the
/// rules or excluded from backup), decided once per folder and remembered for one pass.
struct ReachableFolders {
    /// Folders (relative paths) whose subtree the scan skips: excluded from backup.
    let excluded: Set<String>
    let rules: IgnoreRules
    private var known: [String: Bool] = [:]

    init(excluded: Set<String>, rules: IgnoreRules) {
        self.excluded = excluded
        self.rules = rules
    }

    /// Whether every folder on the way to the item at the relative `path` is one the scan
    /// descends into (true at the top).
    mutating func isReachable(parentOf path: String) -> Bool {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return true }
        return isReachable(folder: String(path.utf8[..<slash])!)
    }

    /// Whether the scan descends into the folder at the relative `folder` path and every folder
    /// above it.
    mutating func isReachable(folder: String) -> Bool {
        if let answer = known[folder] { return answer }
        let name: String
        let above: Bool
        if let slash = folder.utf8.lastIndex(of: UInt8(ascii: "/")) {
            above = isReachable(folder: String(folder.utf8[..<slash])!)
            name = String(folder.utf8[folder.utf8.index(after: slash)...])!
        } else {
            above = true
            name = folder
        }
        let answer = above && !excluded.contains(folder)
            && !SyncFiles.isIgnored(name: name, relativePath: folder, isDirectory: true, rules: rules)
        known[folder] = answer
        return answer
    }
}
