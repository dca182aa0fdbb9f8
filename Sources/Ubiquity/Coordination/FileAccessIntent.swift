// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization

/// One item to read or write in ``FileCoordinator/coordinate(with:queue:byAccessor:)``:
/// Apple's `NSFileAccessIntent`.
public final class FileAccessIntent: Sendable {
    enum Kind: Sendable, Equatable {
        case reading(FileCoordinator.ReadingOptions)
        case writing(FileCoordinator.WritingOptions)
    }
    let kind: Kind
    private let currentURL: Mutex<URL>

    /// The item's URL. It may change when another writer moves the item while this intent
    /// waits: always use `intent.url` inside the accessor.
    public var url: URL { currentURL.withLock { $0 } }

    init(url: URL, kind: Kind) {
        self.kind = kind
        self.currentURL = Mutex(url)
    }

    func updateURL(_ url: URL) { currentURL.withLock { $0 = url } }

    /// An intent to read `url`.
    public class func readingIntent(with url: URL, options: FileCoordinator.ReadingOptions = []) -> FileAccessIntent {
        FileAccessIntent(url: url, kind: .reading(options))
    }

    /// An intent to write `url`.
    public class func writingIntent(with url: URL, options: FileCoordinator.WritingOptions = []) -> FileAccessIntent {
        FileAccessIntent(url: url, kind: .writing(options))
    }
}
