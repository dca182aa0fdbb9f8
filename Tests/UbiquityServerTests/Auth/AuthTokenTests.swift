// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Testing
@testable import UbiquityServer

@Suite struct AuthTokenTests {
    @Test func generatedTokensAreBase64URLOf32Bytes() {
        let token = SecretToken.generate()
        #expect(token.count == SecretToken.characterCount)
        #expect(SecretToken.isWellFormed(token))
        #expect(!token.contains("=") && !token.contains("+") && !token.contains("/"))
        #expect(AuthEncoding.decodeBase64(lenient: token)?.count == 32)
    }

    @Test func generatedTokensAreUnique() {
        let tokens = Set((0..<2000).map { _ in SecretToken.generate() })
        #expect(tokens.count == 2000)
    }

    @Test func digestIsStableLowercaseHexSHA256() {
        #expect(SecretToken.digest("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let token = SecretToken.generate()
        #expect(SecretToken.digest(token) == SecretToken.digest(token))
        #expect(SecretToken.digest(token) != SecretToken.digest(token + "x"))
        #expect(SecretToken.digest(token).count == 64)
    }

    @Test func keyIDsAre64LowercaseHex() {
        let id = SecretToken.keyID()
        #expect(id.count == 64)
        #expect(id.allSatisfy { "0123456789abcdef".contains($0) })
        #expect(SecretToken.keyID() != id)
    }

    @Test func wellFormedRejectsGarbage() {
        #expect(!SecretToken.isWellFormed(""))
        #expect(!SecretToken.isWellFormed(String(repeating: "a", count: 42)))
        #expect(!SecretToken.isWellFormed(String(repeating: "a", count: 42) + "="))
        #expect(!SecretToken.isWellFormed(String(repeating: "é", count: 43)))
        #expect(SecretToken.isWellFormed(String(repeating: "-", count: 43)))
    }

    @Test func constantTimeEquality() {
        #expect(SecretToken.constantTimeEquals("abc", "abc"))
        #expect(SecretToken.constantTimeEquals("", ""))
        #expect(!SecretToken.constantTimeEquals("abc", "abd"))
        #expect(!SecretToken.constantTimeEquals("abc", "ab"))
        #expect(!SecretToken.constantTimeEquals("", "a"))
        #expect(!SecretToken.constantTimeEquals("ab\u{0}", "ab"))
        #expect(SecretToken.constantTimeEquals([UInt8](repeating: 7, count: 32), [UInt8](repeating: 7, count: 32)))
    }

    @Test func lenientBase64() {
        #expect(AuthEncoding.decodeBase64(lenient: "aGk=") == Array("hi".utf8))
        #expect(AuthEncoding.decodeBase64(lenient: "aGk") == Array("hi".utf8))
        #expect(AuthEncoding.decodeBase64(lenient: "-_8") == [0xFB, 0xFF])
        #expect(AuthEncoding.decodeBase64(lenient: "+/8=") == [0xFB, 0xFF])
        #expect(AuthEncoding.decodeBase64(lenient: "a") == nil)
        #expect(AuthEncoding.decodeBase64(lenient: "") == nil)
        #expect(AuthEncoding.decodeBase64(lenient: "aGk===") == nil)
        #expect(AuthEncoding.decodeBase64(lenient: "a*k=") == nil)
    }
}

@Suite struct AuthHeadersTests {
    @Test func headerNames() {
        #expect(CloudKitAuthHeaders.keyID == "X-Apple-CloudKit-Request-KeyID")
        #expect(CloudKitAuthHeaders.iso8601Date == "X-Apple-CloudKit-Request-ISO8601Date")
        #expect(CloudKitAuthHeaders.signatureV1 == "X-Apple-CloudKit-Request-SignatureV1")
        #expect(CloudKitAuthHeaders.webAuthToken == "X-Apple-CloudKit-Web-Auth-Token")
        #expect(CloudKitAuthHeaders.requestUUID == "X-Apple-Request-UUID")
        #expect(CloudKitAuthHeaders.cloudKitVersion == "X-Apple-CloudKit-Version")
        #expect(HTTPField.Name.cloudKitRequestSignatureV1.canonicalName == "x-apple-cloudkit-request-signaturev1")
        var fields = HTTPFields()
        fields[.cloudKitRequestKeyID] = "abc"
        #expect(fields[HTTPField.Name("x-apple-cloudkit-request-keyid")!] == "abc")
    }
}
