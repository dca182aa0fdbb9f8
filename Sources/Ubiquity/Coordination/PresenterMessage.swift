// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// A message to one presenter, as the engine sends it (in-process or over the daemon's socket).
package enum PresenterMessage: Sendable, Equatable {
    case relinquishToReader(token: UInt64)
    case relinquishToWriter(token: UInt64)
    case savePresentedItemChanges
    case accommodateDeletion
    case accommodateSubitemDeletion(path: String)
    case reacquire(token: UInt64)
    case didChange
    case didMove(to: String)
    case subitemDidAppear(path: String)
    case subitemDidChange(path: String)
    case subitemDidMove(from: String, to: String)
    case versionEvent(VersionEventKind, itemPath: String, versionID: String, subitem: Bool)
    case ubiquityAttributesChanged(keys: [String])

    /// Whether the presenter must answer (the coordination waits for it).
    package var needsReply: Bool {
        switch self {
        case .relinquishToReader, .relinquishToWriter, .savePresentedItemChanges, .accommodateDeletion,
             .accommodateSubitemDeletion: return true
        default: return false
        }
    }
}

/// What happened to a file version.
package enum VersionEventKind: String, Sendable {
    case gained, lost, resolved
}

/// Where the engine sends a presenter's messages: the presenter object itself, or a process
/// connected to the daemon that hosts it.
package protocol PresenterEndpoint: AnyObject, Sendable {
    /// Delivers `message`; `reply` is called once with nil (done) or an error when the message
    /// needs a reply, and is never called otherwise.
    func deliver(_ message: PresenterMessage, reply: (@Sendable ((UbiquityError)?) -> Void)?)
    /// Delivers several messages that need no reply, in order (one queue hop where possible).
    func deliver(_ messages: [PresenterMessage])
    /// Where the presenter lives, for error messages ("in process 1234").
    var location: String { get }
}

extension PresenterEndpoint {
    package var location: String { "in process \(getpid())" }

    package func deliver(_ messages: [PresenterMessage]) {
        for message in messages { deliver(message, reply: nil) }
    }
}
