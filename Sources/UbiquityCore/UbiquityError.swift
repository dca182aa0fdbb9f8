// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The error type of Ubiquity's libraries: a code to match on, a message that says what went
/// wrong and how to fix it, and the underlying error when there is one.
///
/// Modelled on SwiftNIO's `FileSystemError`: the code is an extensible struct rather than a
/// public enum, so new codes do not break anyone's `switch`.
public struct UbiquityError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: String, Sendable, CaseIterable {
            case invalidArgument, notFound, alreadyExists, permissionDenied, io, unsupported
            case unknownContainer, outsideContainer, timedOut, cancelled, wouldDeadlock
            case presenterFailed, serviceUnavailable, protocolError, conflict, quotaExceeded
        }
        fileprivate let base: Base
        /// An argument (a path, an identifier, an option) is not of the expected form.
        public static var invalidArgument: Self { .init(base: .invalidArgument) }
        /// The item does not exist.
        public static var notFound: Self { .init(base: .notFound) }
        /// The item already exists and the operation would replace it.
        public static var alreadyExists: Self { .init(base: .alreadyExists) }
        /// The operating system refused access.
        public static var permissionDenied: Self { .init(base: .permissionDenied) }
        /// A read, write or other system call failed.
        public static var io: Self { .init(base: .io) }
        /// The file system or platform does not support the operation (for example user xattrs).
        public static var unsupported: Self { .init(base: .unsupported) }
        /// The ubiquity container identifier is not one this process declared.
        public static var unknownContainer: Self { .init(base: .unknownContainer) }
        /// The path is not inside the container it was used with.
        public static var outsideContainer: Self { .init(base: .outsideContainer) }
        /// A coordinated access or a presenter did not finish within its time-out.
        public static var timedOut: Self { .init(base: .timedOut) }
        /// The operation was cancelled (`FileCoordinator.cancel()`).
        public static var cancelled: Self { .init(base: .cancelled) }
        /// Waiting would deadlock: the caller already holds a conflicting coordinated access.
        public static var wouldDeadlock: Self { .init(base: .wouldDeadlock) }
        /// A file presenter answered a message with an error.
        public static var presenterFailed: Self { .init(base: .presenterFailed) }
        /// The coordination service (the daemon) went away or could not be reached.
        public static var serviceUnavailable: Self { .init(base: .serviceUnavailable) }
        /// A peer sent a message that does not follow the protocol.
        public static var protocolError: Self { .init(base: .protocolError) }
        /// The item changed in a way that conflicts with the operation.
        public static var conflict: Self { .init(base: .conflict) }
        /// A limit on how much may be stored was reached (for example the key-value store's
        /// 1024 keys or 1 MB).
        public static var quotaExceeded: Self { .init(base: .quotaExceeded) }

        /// A stable name for the code (`"timedOut"`), used in JSON output and on the wire.
        public var description: String { base.rawValue }
        /// A stable number for the code, used as the `NSError` code.
        public var number: Int { Base.allCases.firstIndex(of: base)! + 1 }
        /// The code with the given stable name, if there is one.
        public init?(name: String) {
            guard let base = Base(rawValue: name) else { return nil }
            self.base = base
        }
        fileprivate init(base: Base) { self.base = base }
    }

    /// What kind of failure this is.
    public var code: Code
    /// What went wrong, in words a user can act on.
    public var message: String
    /// The error that caused this one, if any.
    public var underlying: (any Error)?

    /// Makes an error.
    public init(_ code: Code, _ message: String, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// `"code: message (underlying)"`.
    public var description: String {
        var text = "\(code): \(message)"
        if let underlying { text += " (\(underlying))" }
        return text
    }

    /// An error for a failed system call, with the code derived from `errno`.
    public static func posix(_ call: String, path: String? = nil, errno err: Int32 = errno) -> UbiquityError {
        let reason = String(cString: strerror(err))
        let subject = path.map { " on '\($0)'" } ?? ""
        let code: Code
        switch err {
        case ENOENT, ENOTDIR: code = .notFound
        case EEXIST, ENOTEMPTY: code = .alreadyExists
        case EACCES, EPERM, EROFS: code = .permissionDenied
        case EOPNOTSUPP, ENOSYS: code = .unsupported
        case EINVAL, ENAMETOOLONG, EISDIR: code = .invalidArgument
        default: code = .io
        }
        return UbiquityError(code, "\(call) failed\(subject): \(reason)",
                             underlying: POSIXError(POSIXErrorCode(rawValue: err) ?? .EIO))
    }
}

extension UbiquityError: CustomNSError, LocalizedError {
    /// The `NSError` domain of Ubiquity's errors.
    public static var errorDomain: String { "UbiquityErrorDomain" }
    /// The stable number of the code.
    public var errorCode: Int { code.number }
    /// The message and underlying error, for `NSError` bridging.
    public var errorUserInfo: [String: Any] {
        var info: [String: Any] = [NSLocalizedDescriptionKey: message, "UbiquityErrorCode": code.description]
        if let underlying { info[NSUnderlyingErrorKey] = underlying as NSError }
        return info
    }
    /// The message.
    public var errorDescription: String? { description }

    /// The error as Apple's APIs would report it: `cancelled` becomes `NSUserCancelledError` in
    /// `NSCocoaErrorDomain` (as `NSFileCoordinator.cancel()` documents); the rest keep their domain.
    public var nsError: NSError {
        if code == .cancelled {
            return NSError(domain: NSCocoaErrorDomain, code: NSUserCancelledError,
                           userInfo: [NSLocalizedDescriptionKey: message])
        }
        return self as NSError
    }
}

extension UbiquityError {
    /// `error` itself when it is a `UbiquityError`, otherwise an `io` error saying `context`
    /// with `error` as the underlying error.
    public static func wrapping(_ error: any Error, _ context: String) -> UbiquityError {
        if let error = error as? UbiquityError { return error }
        return UbiquityError(.io, context, underlying: error)
    }
}
