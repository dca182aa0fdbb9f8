// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import UbiquityCore

/// Delivers engine messages to a presenter object in this process, on its operation queue.
package final class LocalPresenterEndpoint: PresenterEndpoint {
    package let presenter: any FilePresenter
    private let reacquirers = Mutex<[UInt64: @Sendable () -> Void]>([:])

    package init(presenter: any FilePresenter) {
        self.presenter = presenter
    }

    package func deliver(_ message: PresenterMessage, reply: (@Sendable (UbiquityError?) -> Void)?) {
        let presenter = self.presenter
        let queue = presenter.presentedItemOperationQueue
        let answer: @Sendable ((any Error)?) -> Void = { error in
            reply?(error.map { error in
                (error as? UbiquityError) ?? UbiquityError(.presenterFailed, "\(error)", underlying: error)
            })
        }
        switch message {
        case .relinquishToReader(let token), .relinquishToWriter(let token):
            let toReader: Bool
            if case .relinquishToReader = message { toReader = true } else { toReader = false }
            queue.addOperation { [self] in
                let block: @Sendable ((@Sendable () -> Void)?) -> Void = { reacquirer in
                    if let reacquirer { self.reacquirers.withLock { $0[token] = reacquirer } }
                    answer(nil)
                }
                if toReader { presenter.relinquishPresentedItem(toReader: block) } else { presenter.relinquishPresentedItem(toWriter: block) }
            }
        case .reacquire(let token):
            guard let reacquirer = reacquirers.withLock({ $0.removeValue(forKey: token) }) else { return }
            queue.addOperation { reacquirer() }
        case .savePresentedItemChanges:
            queue.addOperation { presenter.savePresentedItemChanges(completionHandler: answer) }
        case .accommodateDeletion:
            queue.addOperation { presenter.accommodatePresentedItemDeletion(completionHandler: answer) }
        case .accommodateSubitemDeletion(let path):
            queue.addOperation { presenter.accommodatePresentedSubitemDeletion(at: URL(fileURLWithPath: path), completionHandler: answer) }
        case .didChange:
            queue.addOperation { presenter.presentedItemDidChange() }
        case .didMove(let to):
            queue.addOperation { presenter.presentedItemDidMove(to: URL(fileURLWithPath: to)) }
        case .subitemDidAppear(let path):
            queue.addOperation { presenter.presentedSubitemDidAppear(at: URL(fileURLWithPath: path)) }
        case .subitemDidChange(let path):
            queue.addOperation { presenter.presentedSubitemDidChange(at: URL(fileURLWithPath: path)) }
        case .subitemDidMove(let from, let to):
            queue.addOperation { presenter.presentedSubitem(at: URL(fileURLWithPath: from), didMoveTo: URL(fileURLWithPath: to)) }
        case .versionEvent(let kind, let itemPath, let versionID, let subitem):
            let url = URL(fileURLWithPath: itemPath)
            queue.addOperation {
                guard let version = FileVersion.version(itemAt: url, forPersistentIdentifier: versionID) else { return }
                switch (kind, subitem) {
                case (.gained, false): presenter.presentedItemDidGain(version)
                case (.lost, false): presenter.presentedItemDidLose(version)
                case (.resolved, false): presenter.presentedItemDidResolveConflict(version)
                case (.gained, true): presenter.presentedSubitem(at: url, didGain: version)
                case (.lost, true): presenter.presentedSubitem(at: url, didLose: version)
                case (.resolved, true): presenter.presentedSubitem(at: url, didResolve: version)
                }
            }
        case .ubiquityAttributesChanged(let keys):
            queue.addOperation { presenter.presentedItemDidChangeUbiquityAttributes(Set(keys.map(URLResourceKey.init(rawValue:)))) }
        }
    }
}
