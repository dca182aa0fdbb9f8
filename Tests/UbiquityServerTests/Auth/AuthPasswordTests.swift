// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
@testable import UbiquityServer

@Suite struct AuthPasswordTests {
    /// N = 16: fast enough to run many times.
    let hasher = PasswordHasher(cost: 4)

    @Test func hashHasTheSelfDescribingFormat() throws {
        let hashed = try hasher.hash("correct horse battery staple")
        let parts = hashed.split(separator: "$", omittingEmptySubsequences: false)
        #expect(parts.count == 5)
        #expect(parts[1] == "scrypt")
        #expect(parts[2] == "ln=4,r=8,p=1")
        #expect(AuthEncoding.decodeBase64(lenient: String(parts[3]))?.count == 16)
        #expect(AuthEncoding.decodeBase64(lenient: String(parts[4]))?.count == 32)
        #expect(!parts[3].contains("=") && !parts[4].contains("="))
        #expect(PasswordHasher.isWellFormed(hashed))
    }

    @Test func defaultParameters() {
        let standard = PasswordHasher()
        #expect(standard.cost == 15 && standard.blockSize == 8 && standard.parallelism == 1)
    }

    @Test func verifiesTheRightPasswordOnly() throws {
        let hashed = try hasher.hash("s3cret!")
        #expect(hasher.verify("s3cret!", against: hashed))
        #expect(!hasher.verify("s3cret", against: hashed))
        #expect(!hasher.verify("S3cret!", against: hashed))
        #expect(!hasher.verify("s3cret! ", against: hashed))
        #expect(!hasher.verify("", against: hashed))
    }

    @Test func saltsDiffer() throws {
        let first = try hasher.hash("same")
        let second = try hasher.hash("same")
        #expect(first != second)
        #expect(hasher.verify("same", against: first) && hasher.verify("same", against: second))
    }

    @Test func verifyUsesTheStoredParameters() throws {
        let cheaper = PasswordHasher(cost: 3, blockSize: 4, parallelism: 2)
        let hashed = try cheaper.hash("pw")
        #expect(hashed.contains("$ln=3,r=4,p=2$"))
        #expect(hasher.verify("pw", against: hashed))
        #expect(hasher.needsRehash(hashed))
        #expect(!cheaper.needsRehash(hashed))
        #expect(hasher.needsRehash("garbage"))
    }

    /// RFC 7914 §12, third vector (N = 16384, r = 8, p = 1, 64-byte key), as a stored hash: the
    /// format interoperates with other scrypt implementations.
    @Test func rfc7914Vector() {
        let key = "7023bdcb3afd7348461c06cd81fd38ebfda8fbba904f8e3ea9b543f6545da1f2"
            + "d5432955613f0fcf62d49705242a9af9e61e85dc0d651e40dfcf017b45575887"
        let hashed = "$scrypt$ln=14,r=8,p=1$" + AuthEncoding.base64Unpadded(Array("SodiumChloride".utf8)) + "$"
            + AuthEncoding.base64Unpadded(Hex.decode(key)!)
        #expect(hasher.verify("pleaseletmein", against: hashed))
        #expect(!hasher.verify("pleaseletmeout", against: hashed))
    }

    @Test func unicodeIsNormalised() throws {
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        let hashed = try hasher.hash(composed)
        #expect(hasher.verify(decomposed, against: hashed))
    }

    @Test func refusesEmptyAndOverlongPasswords() throws {
        #expect {
            try hasher.hash("")
        } throws: { ($0 as? UbiquityError)?.code == .invalidArgument }
        #expect {
            try hasher.hash(String(repeating: "x", count: 1025))
        } throws: { ($0 as? UbiquityError)?.code == .invalidArgument }
        #expect {
            try hasher.hash(String(repeating: "é", count: 513))  // 1026 bytes
        } throws: { ($0 as? UbiquityError)?.code == .invalidArgument }
        let longest = String(repeating: "x", count: 1024)
        let hashed = try hasher.hash(longest)
        #expect(hasher.verify(longest, against: hashed))
        #expect(!hasher.verify(longest + "x", against: hashed))
    }

    @Test(arguments: [
        "",
        "$scrypt$",
        "scrypt$ln=4,r=8,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5",
        "$argon2id$ln=4,r=8,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5",
        "$scrypt$ln=4,r=8$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5",
        "$scrypt$ln=4,r=8,p=1,x=2$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5",
        "$scrypt$ln=4,ln=8,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5",
        "$scrypt$ln=99,r=8,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5",
        "$scrypt$ln=20,r=8,p=16$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5",
        "$scrypt$ln=16,r=1,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5",
        "$scrypt$ln=-4,r=8,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5",
        "$scrypt$ln=four,r=8,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5",
        "$scrypt$ln=4,r=8,p=0$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5",
        "$scrypt$ln=4,r=8,p=1$c2Fs$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5",
        "$scrypt$ln=4,r=8,p=1$c2FsdHNhbHRzYWx0$a2V5",
        "$scrypt$ln=4,r=8,p=1$!!!notbase64!!!$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5",
        "$scrypt$ln=4,r=8,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5$",
        "$scrypt$ln=4,r=8,p=1$c2FsdHNhbHRzYWx0",
    ])
    func malformedHashesNeverVerify(_ hashed: String) {
        #expect(!hasher.verify("password", against: hashed))
        #expect(!PasswordHasher.isWellFormed(hashed))
        #expect(hasher.needsRehash(hashed))
    }

    @Test func wellFormedButWrongKeyDoesNotVerify() {
        let hashed = "$scrypt$ln=4,r=8,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5"
        #expect(PasswordHasher.isWellFormed(hashed))
        #expect(!hasher.verify("password", against: hashed))
    }

    @Test func parseFormatRoundTrip() throws {
        let hashed = try hasher.hash("round trip")
        let parsed = try #require(PasswordHasher.parse(hashed))
        #expect(PasswordHasher.format(parsed) == hashed)
    }
}
