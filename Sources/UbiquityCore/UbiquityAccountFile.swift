// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// The file that records the signed-in account (`UbiquityPaths.accountFile`, JSON with at least
/// `server` and `user`), from which the Ubiquity library derives its identity token. `ubiq account` writes
/// and removes it; the library's identity monitor notices when any process does.
public struct UbiquityAccountFile: Sendable, Equatable {
    /// The account a file describes.
    public struct Account: Codable, Sendable, Hashable {
        /// The server's base URL, e.g. `https://ubiquity.example.com`.
        public var server: String
        /// The user name on that server.
        public var user: String
        /// The device token `ubiq account login` received (a secret: the file is 0600); nil in
        /// files written before sign-in kept one.
        public var deviceToken: String?
        /// This device's name, as the server and `ubiq account status` show it.
        public var deviceName: String?
        /// When this device signed in (milliseconds since 1970).
        public var signedInAt: Int64?

        /// An account.
        public init(server: String, user: String, deviceToken: String? = nil, deviceName: String? = nil, signedInAt: Int64? = nil) {
            self.server = server
            self.user = user
            self.deviceToken = deviceToken
            self.deviceName = deviceName
            self.signedInAt = signedInAt
        }
    }

    /// Where the file is.
    public let url: URL

    /// The account file of `paths` (`$XDG_CONFIG_HOME/ubiquity/account.json` by default).
    public init(paths: UbiquityPaths = UbiquityPaths()) {
        url = paths.accountFile
    }

    /// The account file at `url`.
    public init(url: URL) {
        self.url = url
    }

    /// The account in the file, or nil when there is no file (nobody signed in). Throws
    /// `invalidArgument` when the file is not valid account JSON, `io` when it cannot be read.
    public func read() throws -> Account? {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            if FileStamp.of(url.path) == nil { return nil }
            throw UbiquityError(.io, "cannot read the account file '\(url.path)'", underlying: error)
        }
        let account: Account
        do {
            account = try JSONDecoder().decode(Account.self, from: data)
        } catch {
            throw UbiquityError(.invalidArgument, "the account file '\(url.path)' is not JSON with string fields "
                                + "'server' and 'user'; sign in again", underlying: error)
        }
        try Self.check(account, in: url)
        return account
    }

    /// Replaces the file atomically with `account` (mode 0600; its folder is created with 0700).
    public func write(_ account: Account) throws {
        try Self.check(account, in: url)
        try UbiquityPaths.ensureDirectory(url.deletingLastPathComponent())
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(account)
        try SafeSave.write(data, to: url.path, mode: .overwrite, permissions: 0o600)
        guard chmod(url.path, 0o600) == 0 else { throw UbiquityError.posix("chmod", path: url.path) }
    }

    /// Removes the file (signs out); does nothing when there is none.
    public func remove() throws {
        guard unlink(url.path) == 0 else {
            if errno == ENOENT { return }
            throw UbiquityError.posix("unlink", path: url.path)
        }
        try? SafeSave.syncDirectory(url.deletingLastPathComponent().path)  // it is gone either way
    }

    private static func check(_ account: Account, in url: URL) throws {
        for (field, value) in [("server", account.server), ("user", account.user)]
        where value.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            throw UbiquityError(.invalidArgument, "the account for '\(url.path)' has an empty '\(field)'")
        }
    }
}
