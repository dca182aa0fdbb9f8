// SPDX-License-Identifier: Apache-2.0
import CUbiquityShims
import Foundation

/// Reading and writing Linux extended attributes in the `user.` namespace.
public enum ExtendedAttributes {
    /// The value of attribute `name` of the item at `path`, or nil when it has none.
    public static func value(_ name: String, at path: String) throws -> [UInt8]? {
        while true {
            let size = ub_getxattr(path, name, nil, 0)
            if size < 0 {
                if errno == ENODATA { return nil }
                throw failure("getxattr", path: path)
            }
            var buffer = [UInt8](repeating: 0, count: size)
            let read = buffer.withUnsafeMutableBytes { ub_getxattr(path, name, $0.baseAddress, size) }
            if read < 0 {
                if errno == ERANGE { continue }  // grew in between; try again
                if errno == ENODATA { return nil }
                throw failure("getxattr", path: path)
            }
            return Array(buffer.prefix(read))
        }
    }

    /// Sets attribute `name` of the item at `path` to `value`.
    public static func setValue(_ value: [UInt8], for name: String, at path: String) throws {
        let rc = value.withUnsafeBytes { ub_setxattr(path, name, $0.baseAddress, value.count, 0) }
        if rc != 0 { throw failure("setxattr", path: path) }
    }

    /// Removes attribute `name`; removing a missing attribute is not an error.
    public static func removeValue(for name: String, at path: String) throws {
        if ub_removexattr(path, name) != 0, errno != ENODATA { throw failure("removexattr", path: path) }
    }

    /// The names of the item's attributes.
    public static func names(at path: String) throws -> [String] {
        let size = ub_listxattr(path, nil, 0)
        if size < 0 { throw failure("listxattr", path: path) }
        if size == 0 { return [] }
        var buffer = [CChar](repeating: 0, count: size)
        let read = buffer.withUnsafeMutableBufferPointer { ub_listxattr(path, $0.baseAddress, size) }
        if read < 0 { throw failure("listxattr", path: path) }
        return buffer.prefix(read).split(separator: 0).map { String(decoding: $0.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
    }

    /// Copies every `user.` attribute of `source` to `destination` (used by safe-save so that the
    /// skip-backup attribute and item identity survive a save by rename). Unsupported file systems
    /// are skipped silently.
    public static func copyUserAttributes(from source: String, to destination: String) throws {
        let list: [String]
        do { list = try names(at: source) } catch let error as UbiquityError where error.code == .unsupported || error.code == .notFound {
            return
        }
        for name in list where name.hasPrefix("user.") {
            if let value = try value(name, at: source) { try setValue(value, for: name, at: destination) }
        }
    }

    static func failure(_ call: String, path: String) -> UbiquityError {
        let err = errno
        if err == EOPNOTSUPP {
            return UbiquityError(.unsupported,
                "the file system holding '\(path)' does not support user extended attributes (\(call): \(String(cString: strerror(err)))); use a file system such as ext4, xfs, btrfs or tmpfs (Linux 6.6+), mounted with user_xattr",
                underlying: POSIXError(.EOPNOTSUPP))
        }
        return UbiquityError.posix(call, path: path, errno: err)
    }
}
