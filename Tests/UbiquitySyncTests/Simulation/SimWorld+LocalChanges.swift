// SPDX-License-Identifier: Apache-2.0
import Foundation
import Ubiquity
@testable import UbiquitySync

/// What users do to the files of a device, as the world's steps: each tells the ledger which
/// bytes it replaced or deleted (the ones it found there) and which it wrote.
extension SimWorld {
    /// Returns the items it changed (relative paths), which the device's disk makes durable.
    @discardableResult
    func localChange(_ kind: Step, on device: SimDevice) async throws -> [String] {
        let listing = device.listing()
        let fm = FileManager.default
        func absent(_ relative: String) -> Bool { fm.fileExists(atPath: device.url(relative).path) == false }
        func parentIsFolder(_ relative: String) -> Bool {
            let parent = (relative as NSString).deletingLastPathComponent
            var isDirectory: ObjCBool = false
            return parent.isEmpty || !fm.fileExists(atPath: device.url(parent).path, isDirectory: &isDirectory) || isDirectory.boolValue
        }
        func randomPath() -> String {
            let folder = pick(Self.folders) ?? ""
            let name = pick(Self.names) ?? "a.txt"
            return folder.isEmpty ? name : folder + "/" + name
        }
        func ancestorsAreFolders(_ relative: String) -> Bool {
            var path = (relative as NSString).deletingLastPathComponent
            while !path.isEmpty {
                var isDirectory: ObjCBool = false
                if fm.fileExists(atPath: device.url(path).path, isDirectory: &isDirectory), !isDirectory.boolValue { return false }
                path = (path as NSString).deletingLastPathComponent
            }
            return true
        }
        /// The user deletes what they see at `relative`: its bytes, and its versions with it.
        func supersedeItem(_ relative: String) {
            ledger.supersede(device.read(relative))
            for version in SimDevice.versionContents(of: device.url(relative)) { ledger.supersede(version) }
        }

        switch kind {
        case .write:
            let path = chance(0.5) ? (pick(listing.files) ?? randomPath()) : randomPath()
            var isDirectory: ObjCBool = false
            if fm.fileExists(atPath: device.url(path).path, isDirectory: &isDirectory), isDirectory.boolValue { return [] }
            guard ancestorsAreFolders(path) else { return [] }
            let data = content(device)
            ledger.supersede(device.read(path))
            ledger.wrote(data, origin: "step \(step) write \(path) on \(device.name)")
            try device.write(path, data, at: time)
            log("\(device.name) write \(path) (\(data.count) B)")
            return [path]
        case .append:
            guard let path = pick(listing.files), let old = device.read(path) else { return [] }
            let data = old + Data("appended at step \(step) on \(device.name)\n".utf8)
            ledger.supersede(old)
            ledger.wrote(data, origin: "step \(step) append \(path) on \(device.name)")
            let handle = try FileHandle(forWritingTo: device.url(path))
            try handle.seekToEnd()
            try handle.write(contentsOf: data.suffix(from: old.count))
            try handle.close()
            device.stamp(path, time)
            log("\(device.name) append \(path)")
            return [path]
        case .editorSave:
            // the safe save of most editors: a temporary beside it (ignored), renamed over it
            guard let path = pick(listing.files) else { return [] }
            let data = content(device)
            let temporary = ((path as NSString).deletingLastPathComponent as NSString).appendingPathComponent(".#" + (path as NSString).lastPathComponent)
            ledger.supersede(device.read(path))
            ledger.wrote(data, origin: "step \(step) editor save \(path) on \(device.name)")
            try device.write(temporary, data, at: time)
            guard rename(device.url(temporary).path, device.url(path).path) == 0 else {
                try? fm.removeItem(at: device.url(temporary))
                return [temporary]
            }
            ledger.count(.editorSave)
            log("\(device.name) editor save \(path)")
            return [temporary, path]
        case .delete:
            guard let path = pick(listing.files) else { return [] }
            supersedeItem(path)
            try fm.removeItem(at: device.url(path))
            log("\(device.name) delete \(path)")
            return [path]
        case .move:
            guard let path = pick(listing.files) else { return [] }
            let target = randomPath()
            guard target != path, absent(target), parentIsFolder(target), ancestorsAreFolders(target) else { return [] }
            try fm.createDirectory(at: device.url(target).deletingLastPathComponent(), withIntermediateDirectories: true)
            guard rename(device.url(path).path, device.url(target).path) == 0 else { return [] }
            log("\(device.name) move \(path) -> \(target)")
            return [path, target]
        case .caseRename:
            guard let path = pick(listing.files + listing.folders) else { return [] }
            let name = (path as NSString).lastPathComponent
            let flipped = name.first.map { $0.isUppercase ? $0.lowercased() : $0.uppercased() }.map { $0 + name.dropFirst() } ?? name
            let target = ((path as NSString).deletingLastPathComponent as NSString).appendingPathComponent(flipped)
            guard target != path, absent(target), rename(device.url(path).path, device.url(target).path) == 0 else { return [] }
            ledger.count(.caseOnlyRename)
            log("\(device.name) case-only rename \(path) -> \(target)")
            return [path, target]
        case .makeFolder:
            guard let folder = pick(Self.folders.filter { !$0.isEmpty }), ancestorsAreFolders(folder + "/x"), absent(folder) else { return [] }
            try fm.createDirectory(at: device.url(folder), withIntermediateDirectories: true)
            log("\(device.name) make folder \(folder)")
            return [folder]
        case .deleteFolder:
            guard let folder = pick(listing.folders) else { return [] }
            for file in listing.files where file.hasPrefix(folder + "/") { supersedeItem(file) }
            for excluded in listing.excluded where excluded.hasPrefix(folder + "/") {
                // a skip-backup file, or every file in a skip-backup folder
                let files = fm.subpaths(atPath: device.url(excluded).path).map { $0.map { excluded + "/" + $0 } } ?? []
                for file in [excluded] + files { supersedeItem(file) }
            }
            for stub in listing.stubs where stub.hasPrefix(folder + "/") {
                // an evicted file goes with its folder: what the server has for it was deleted
                // knowingly (its entry found by the record the stub names: a rename not passed
                // yet left the journal's path behind, seed 9695)
                let name = (stub as NSString).lastPathComponent.dropFirst().dropLast(".icloud".count)
                let path = ((stub as NSString).deletingLastPathComponent as NSString).appendingPathComponent(String(name))
                let journal = await device.engine.journal
                let named = try Placeholder.read(stubAt: device.url(stub).path).flatMap { try journal.entry(id: $0.id) }
                if let entry = try named ?? journal.entry(path: path) { ledger.supersede(digest: entry.contentHash) }
            }
            try fm.removeItem(at: device.url(folder))
            ledger.count(.folderDeleted)
            log("\(device.name) delete folder \(folder)")
            return [folder]
        case .moveFolder:
            guard let folder = pick(listing.folders), let into = pick(listing.folders.filter { $0 != folder } + [""]) else { return [] }
            guard !into.hasPrefix(folder + "/") else { return [] }
            let target = (into.isEmpty ? "" : into + "/") + (folder as NSString).lastPathComponent
            guard target != folder, absent(target) else { return [] }
            guard rename(device.url(folder).path, device.url(target).path) == 0 else { return [] }
            let (from, destination) = ((folder as NSString).lastPathComponent, (into as NSString).lastPathComponent)
            if folderMoves.contains(where: { $0.device != device.number && $0.from == destination && $0.into == from }) { ledger.count(.moveCycle) }
            folderMoves.append((device.number, from, destination))
            log("\(device.name) move folder \(folder) -> \(target)")
            return [folder, target]
        default:
            return []
        }
    }
}
