// SPDX-License-Identifier: Apache-2.0

/// A replaceable callback kept behind a lock: `Mutex<CallbackSlot<@Sendable () -> Void>>`, never
/// `Mutex<(@Sendable () -> Void)?>`.
///
/// Why it exists: when a `Mutex`'s value *is* a function type (or an optional one, or a tuple
/// holding one), Swift 6.x re-abstracts the value on every `withLock` that reads it, and writes
/// the re-abstracted closure back: each `withLock { $0 }` wraps the stored closure in two more
/// reabstraction thunks. A callback read once per event became a chain as long as the events
/// so far: every call walked it (the mounted folder's change feed spent a fifth of the
/// daemon's CPU in those thunks during a `tar -xf`), and past about 700,000 calls the walk
/// overflowed the stack. A field of a nominal type is stored at its own abstraction, so the
/// same closure in this struct is read as it is.
package struct CallbackSlot<Callback: Sendable>: Sendable {
    /// The callback, nil when none is set.
    package var callback: Callback?

    /// A slot holding `callback` (nil: empty).
    package init(_ callback: Callback? = nil) {
        self.callback = callback
    }
}
