// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import _CryptoExtras

/// Hashes and verifies user passwords with scrypt, a memory-hard key derivation function.
///
/// Hashes are self-describing strings in the PHC style:
///
/// ```
/// $scrypt$ln=15,r=8,p=1$<salt, base64 without padding>$<key, base64 without padding>
/// ```
///
/// with a 16-byte random salt and a 32-byte derived key. `ln` is log2 of scrypt's N, `r` the
/// block size, `p` the parallelism. ``verify(_:against:)`` uses the parameters stored in the
/// hash, so raising the cost later keeps old hashes valid; ``needsRehash(_:)`` says when to
/// store a fresh hash after a successful sign-in.
///
/// Passwords are normalised to Unicode NFC before hashing, so the same password typed on
/// keyboards that compose accents differently verifies. Empty passwords and passwords longer
/// than ``maximumPasswordByteCount`` UTF-8 bytes are refused.
///
/// - Important: with the default cost one hash takes about 32 MiB and a tenth of a second of
///   CPU. Both calls are synchronous; from a request handler run them off the cooperative pool
///   (a dedicated thread or `BlockingWork.run`) and bound how many run at once.
package struct PasswordHasher: Sendable, Hashable {
    /// The default cost: N = 2¹⁵ (32 MiB with r = 8), OWASP's scrypt recommendation.
    package static let defaultCost = 15
    /// The costs `init(cost:)` accepts (log2 of N).
    package static let costRange = 1...20
    /// The block sizes (r) `init` accepts.
    package static let blockSizeRange = 1...32
    /// The parallelism factors (p) `init` accepts.
    package static let parallelismRange = 1...16
    /// The most memory a hash may ask for (128 · N · r · p bytes), 1 GiB; stored hashes asking for
    /// more are refused rather than computed.
    package static let maximumMemory = 1 << 30
    /// The longest password accepted, in UTF-8 bytes (after NFC normalisation).
    package static let maximumPasswordByteCount = 1024
    /// The salt length of new hashes.
    package static let saltByteCount = 16
    /// The derived key length of new hashes.
    package static let keyByteCount = 32

    /// log2 of scrypt's N (CPU and memory cost).
    package let cost: Int
    /// scrypt's r (block size).
    package let blockSize: Int
    /// scrypt's p (parallelism).
    package let parallelism: Int

    /// A hasher with the given scrypt parameters. Tests use a cheap cost (for example 4).
    ///
    /// - Precondition: the parameters are within ``costRange``, ``blockSizeRange`` and
    ///   ``parallelismRange``, N < 2^(16·r) as scrypt requires, and the memory needed is at most
    ///   ``maximumMemory``.
    package init(cost: Int = PasswordHasher.defaultCost, blockSize: Int = 8, parallelism: Int = 1) {
        precondition(Self.parametersAreAcceptable(cost: cost, blockSize: blockSize, parallelism: parallelism),
                     "scrypt parameters out of range: ln=\(cost), r=\(blockSize), p=\(parallelism)")
        self.cost = cost
        self.blockSize = blockSize
        self.parallelism = parallelism
    }

    /// A new hash of `password` with a fresh random salt.
    ///
    /// - Throws: `UbiquityError(.invalidArgument)` for an empty password or one longer than
    ///   ``maximumPasswordByteCount`` bytes; `UbiquityError(.io)` if the key derivation fails.
    package func hash(_ password: String) throws -> String {
        let passwordBytes = try Self.passwordBytes(password)
        let salt = AuthEncoding.randomBytes(count: Self.saltByteCount)
        let key = try Self.derive(passwordBytes, salt: salt, keyByteCount: Self.keyByteCount,
                                  cost: cost, blockSize: blockSize, parallelism: parallelism)
        return Self.format(Parsed(cost: cost, blockSize: blockSize, parallelism: parallelism, salt: salt, key: key))
    }

    /// Whether `password` matches `hashed`, comparing the derived keys in constant time.
    ///
    /// Uses the parameters stored in `hashed`, not this hasher's. False (never a throw) for a
    /// malformed hash, parameters out of range, or a password ``hash(_:)`` would refuse.
    package func verify(_ password: String, against hashed: String) -> Bool {
        guard let parsed = Self.parse(hashed), let passwordBytes = try? Self.passwordBytes(password),
              let key = try? Self.derive(passwordBytes, salt: parsed.salt, keyByteCount: parsed.key.count,
                                         cost: parsed.cost, blockSize: parsed.blockSize,
                                         parallelism: parsed.parallelism)
        else { return false }
        return AuthEncoding.constantTimeEquals(key, parsed.key)
    }

    /// Does the work of ``verify(_:against:)`` with this hasher's parameters and answers false:
    /// for a user name that has no password, so that its answer takes as long as a wrong
    /// password's and timing does not tell existing names from unknown ones.
    package func rejectWithoutHash(_ password: String) -> Bool {
        let bytes = (try? Self.passwordBytes(password)) ?? Array("-".utf8)
        _ = try? Self.derive(bytes, salt: [UInt8](repeating: 0, count: Self.saltByteCount), keyByteCount: Self.keyByteCount,
                             cost: cost, blockSize: blockSize, parallelism: parallelism)
        return false
    }

    /// Whether `hashed` should be replaced by a fresh ``hash(_:)`` (after the password verified):
    /// true when it is malformed or was made with other parameters or lengths than this hasher's.
    package func needsRehash(_ hashed: String) -> Bool {
        guard let parsed = Self.parse(hashed) else { return true }
        return parsed.cost != cost || parsed.blockSize != blockSize || parsed.parallelism != parallelism
            || parsed.salt.count != Self.saltByteCount || parsed.key.count != Self.keyByteCount
    }

    /// Whether `hashed` is a well-formed hash this type can verify.
    package static func isWellFormed(_ hashed: String) -> Bool {
        parse(hashed) != nil
    }
}

extension PasswordHasher {
    /// The parts of a hash string.
    struct Parsed: Equatable {
        var cost: Int
        var blockSize: Int
        var parallelism: Int
        var salt: [UInt8]
        var key: [UInt8]
    }

    static func format(_ parsed: Parsed) -> String {
        "$scrypt$ln=\(parsed.cost),r=\(parsed.blockSize),p=\(parsed.parallelism)$"
            + AuthEncoding.base64Unpadded(parsed.salt) + "$" + AuthEncoding.base64Unpadded(parsed.key)
    }

    /// Parses `$scrypt$ln=…,r=…,p=…$salt$key`; nil when malformed or out of range.
    static func parse(_ hashed: String) -> Parsed? {
        guard hashed.utf8.count <= 512 else { return nil }
        let parts = hashed.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0].isEmpty, parts[1] == "scrypt" else { return nil }
        var values: [String: Int] = [:]
        for item in parts[2].split(separator: ",", omittingEmptySubsequences: false) {
            let pair = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard pair.count == 2, pair[1].utf8.count <= 3, pair[1].utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                  let value = Int(pair[1]), values.updateValue(value, forKey: String(pair[0])) == nil
            else { return nil }
        }
        guard values.count == 3, let cost = values["ln"], let blockSize = values["r"],
              let parallelism = values["p"],
              parametersAreAcceptable(cost: cost, blockSize: blockSize, parallelism: parallelism),
              let salt = decodeBase64(parts[3]), (8...64).contains(salt.count),
              let key = decodeBase64(parts[4]), (16...64).contains(key.count)
        else { return nil }
        return Parsed(cost: cost, blockSize: blockSize, parallelism: parallelism, salt: salt, key: key)
    }

    private static func decodeBase64(_ text: Substring) -> [UInt8]? {
        // Standard alphabet only (the PHC format); padding optional.
        guard !text.contains(where: { $0 == "-" || $0 == "_" || $0.isWhitespace }) else { return nil }
        return AuthEncoding.decodeBase64(lenient: String(text))
    }

    static func parametersAreAcceptable(cost: Int, blockSize: Int, parallelism: Int) -> Bool {
        guard costRange.contains(cost), blockSizeRange.contains(blockSize), parallelismRange.contains(parallelism),
              cost < 16 * blockSize
        else { return false }
        return 128 * (1 << cost) * blockSize * parallelism <= maximumMemory
    }

    /// The password's NFC UTF-8, or an `invalidArgument` error when empty or too long.
    static func passwordBytes(_ password: String) throws -> [UInt8] {
        let bytes = Array(password.precomposedStringWithCanonicalMapping.utf8)
        guard !bytes.isEmpty else {
            throw UbiquityError(.invalidArgument, "The password is empty.")
        }
        guard bytes.count <= maximumPasswordByteCount else {
            throw UbiquityError(.invalidArgument,
                                "The password is longer than \(maximumPasswordByteCount) bytes.")
        }
        return bytes
    }

    static func derive(_ password: [UInt8], salt: [UInt8], keyByteCount: Int, cost: Int, blockSize: Int,
                       parallelism: Int) throws -> [UInt8] {
        do {
            let key = try KDF.Scrypt.deriveKey(from: password, salt: salt, outputByteCount: keyByteCount,
                                               rounds: 1 << cost, blockSize: blockSize, parallelism: parallelism)
            return key.withUnsafeBytes { Array($0) }
        } catch {
            throw UbiquityError(.io, "scrypt key derivation failed (ln=\(cost), r=\(blockSize), p=\(parallelism))",
                                underlying: error)
        }
    }
}
