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

    /// Runs several reply-less messages in one operation on the presenter's queue.
    package func deliver(_ messages: [PresenterMessage]) {
        guard messages.count > 1 else {
            if let message = messages.first { deliver(message, reply: nil) }
            return
        }
        let inline = InlineQueue()
        for message in messages { deliver(message, reply: nil, queue: inline) }
        presenter.presentedItemOperationQueue.addOperation { inline.run() }
    }

    package func deliver(_ message: PresenterMessage, reply: (@Sendable (UbiquityError?) -> Void)?) {
        deliver(message, reply: reply, queue: nil)
    }

    private func deliver(_ message: PresenterMessage, reply: (@Sendable (UbiquityError?) -> Void)?, queue inline: InlineQueue?) {
        let presenter = self.presenter
        let queue: any MessageQueue = inline ?? presenter.presentedItemOperationQueue
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

/// Where a message's work goes: the presenter's queue, or a batch run later in one operation.
protocol MessageQueue {
    func addOperation(_ block: @escaping @Sendable () -> Void)
}

extension OperationQueue: MessageQueue {}

/// Collects blocks to run together, in order, inside one operation.
final class InlineQueue: MessageQueue, @unchecked Sendable {  // @unchecked because blocks are added before run() is scheduled
    private var blocks: [@Sendable () -> Void] = []
    func addOperation(_ block: @escaping @Sendable () -> Void) { blocks.append(block) }
    func run() { for block in blocks { block() } }
}
