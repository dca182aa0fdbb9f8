// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// The claims whose accessors are running on the current thread (or task), to turn a nested
/// coordination that would wait for its own caller into an immediate `wouldDeadlock` error.
enum HeldClaims {
    final class Stack { var claims: [ArbiterState.Claim] = [] }

    nonisolated(unsafe) private static var key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in Unmanaged<Stack>.fromOpaque(pointer!).release() }
        return key
    }()

    @TaskLocal static var taskClaims: [ArbiterState.Claim] = []

    static var threadStack: Stack {
        if let pointer = pthread_getspecific(key) { return Unmanaged<Stack>.fromOpaque(pointer).takeUnretainedValue() }
        let stack = Stack()
        pthread_setspecific(key, Unmanaged.passRetained(stack).toOpaque())
        return stack
    }

    /// The claim held by the caller that `claim` would wait for, if any.
    static func blocker(for claim: ArbiterState.Claim) -> ArbiterState.Claim? {
        (threadStack.claims + taskClaims).first { ArbiterState.conflict($0, claim) }
    }
}
