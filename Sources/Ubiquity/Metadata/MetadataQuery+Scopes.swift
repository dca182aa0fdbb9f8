import Foundation
import UbiquityCore

extension MetadataQuery {
    /// Turns search scopes into folders to search and folders to leave out.
    ///
    /// The ubiquitous scopes stand for every container the process declares
    /// (``UbiquityContainers/shared``): documents = each container's `Documents`, data = each
    /// container without its `Documents`, all = each container. No scope means all of them.
    /// `URL`s and absolute path `String`s name folders.
    static func resolve(scopes: [Any]) throws -> (scopes: [String], excluding: [String]) {
        let containers = UbiquityContainers.shared
        func containerFolders() throws -> [URL] {
            guard !containers.identifiers.isEmpty else {
                throw UbiquityError(.unknownContainer,
                                    "the ubiquitous search scopes need a declared container (UBIQUITY_CONTAINERS or UbiquityContainers.declare)")
            }
            return try containers.identifiers.map { identifier in
                let url = containers.location(of: identifier)
                try UbiquityPaths.ensureDirectory(url.appendingPathComponent(UbiquityContainers.documentsDirectoryName))
                return url
            }
        }
        var included: [String] = []
        var excluded: [String] = []
        for scope in scopes.isEmpty ? [UbiquityMetadataQueryAllUbiquitousScope] : scopes {
            switch scope {
            case let name as String where name == NSMetadataQueryUbiquitousDocumentsScope:
                included += try containerFolders().map { $0.appendingPathComponent(UbiquityContainers.documentsDirectoryName).path }
            case let name as String where name == NSMetadataQueryUbiquitousDataScope:
                let folders = try containerFolders()
                included += folders.map(\.path)
                excluded += folders.map { $0.appendingPathComponent(UbiquityContainers.documentsDirectoryName).path }
            case let name as String where name == UbiquityMetadataQueryAllUbiquitousScope:
                included += try containerFolders().map(\.path)
            case let path as String where path.hasPrefix("/"):
                included.append(CanonicalPath.normalize(path))
            case let url as URL where url.isFileURL:
                included.append(CanonicalPath.normalize(url.path))
            default:
                throw UbiquityError(.invalidArgument,
                                    "search scope '\(scope)': expected NSMetadataQueryUbiquitousDocumentsScope, NSMetadataQueryUbiquitousDataScope, UbiquityMetadataQueryAllUbiquitousScope, a file URL or an absolute path")
            }
        }
        var unique: [String] = []
        for path in included where !unique.contains(path) { unique.append(path) }
        return (unique, excluded)
    }
}
