// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Document save of N MiB against `cp` of the same bytes (filled in once Document lands).
enum DocumentSaveBench {
    static func run(_ options: Options) throws {
        FileHandle.standardError.write(Data("document-save: not available yet\n".utf8))
        exit(1)
    }
}
