// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Testing
import UbiquityCore
@testable import UbiquityServer

@Suite struct AuthSignatureTests {
    let privateKey = P256.Signing.PrivateKey()
    var publicKeyPEM: String { privateKey.publicKey.pemRepresentation }
    let keyID = SecretToken.keyID()
    let path = "/database/1/iCloud.com.example.App/development/public/records/query"
    let body = Array(#"{"zoneWide":false,"query":{"recordType":"Items","filterBy":[],"sortBy":[]}}"#.utf8)
    let now = Date(timeIntervalSince1970: 1_468_379_811)  // 2016-07-13T03:16:51Z
    let nowText = "2016-07-13T03:16:51Z"

    enum Encoding { case der, raw }

    /// Signs `message` and encodes the signature the given way.
    func signature(_ message: String, _ encoding: Encoding = .der, padded: Bool = true, urlSafe: Bool = false,
                   key: P256.Signing.PrivateKey? = nil) throws -> String {
        let signature = try (key ?? privateKey).signature(for: Array(message.utf8))
        var text = (encoding == .der ? signature.derRepresentation : signature.rawRepresentation).base64EncodedString()
        if !padded { text = text.replacingOccurrences(of: "=", with: "") }
        if urlSafe { text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_") }
        return text
    }

    func verify(date: String?, signature: String?, body: [UInt8]? = nil, path: String? = nil,
                pathWithQuery: String? = nil, keyID: String?? = .none, key: String?? = .none,
                now: Date? = nil) -> ServerToServerSignature.Verdict {
        ServerToServerSignature.verify(
            keyID: keyID ?? self.keyID, date: date, signature: signature, body: body ?? self.body,
            path: path ?? self.path, pathWithQuery: pathWithQuery, publicKeyPEM: key ?? publicKeyPEM,
            now: now ?? self.now)
    }

    // MARK: - Reference vectors

    @Test func sha256OfTestMatchesOpenCloudKit() {
        #expect(ServerToServerSignature.bodyHash(Array("test".utf8)) == "n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg=")
        #expect(ServerToServerSignature.bodyHash([UInt8]()) == "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=")
    }

    @Test func rawPayloadMatchesOpenCloudKit() {
        let message = ServerToServerSignature.message(
            date: "2016-07-13T03:16:51Z", body: body, path: "/database/1/iCloud.benjamin.CloudTest/development/public/records/query")
        #expect(message == "2016-07-13T03:16:51Z:0sdWcosXLRqAQp9TQ4LzZOTgiETnGpqlODfsnN9Cqr0="
            + ":/database/1/iCloud.benjamin.CloudTest/development/public/records/query")
    }

    /// OpenCloudKit's `Tests/OpenCloudKitTests/Supporting/eckey.pub` and the DER signature of
    /// `Supporting/test.txt` ("test\n") from `OpenCloudKitTests.testVerifySignedData`.
    @Test func openCloudKitDERSignatureVerifies() throws {
        let pem = """
            -----BEGIN PUBLIC KEY-----
            MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAED/+H2wGpNk2zcPorCDOREC9fDD2u
            1wNVGk5Zjd83g4+7YMrYjTHT3JOdjb+0Q8v+LhgU1ft1aXYHqIaAtzjosQ==
            -----END PUBLIC KEY-----
            """
        let signature = "MEUCIQCa5vSe3xRHpN4FuUeNeNNB7gHpexMN1RYal4wJCpHExAIgdi/IV/K88aeIzoM0YaWp4PkX9T1+1oZNKZQY679uqRk="
        let key = try ServerToServerPublicKey(parsing: pem)
        let candidates = try ServerToServerSignature.decodeSignature(signature).get()
        #expect(candidates.count == 1)
        #expect(key.key.isValidSignature(candidates[0], for: Array("test\n".utf8)))
        #expect(!key.key.isValidSignature(candidates[0], for: Array("test".utf8)))
        // The same signature without padding and as raw r‖s.
        let unpadded = try ServerToServerSignature.decodeSignature(String(signature.dropLast())).get()
        #expect(key.key.isValidSignature(unpadded[0], for: Array("test\n".utf8)))
        let raw = candidates[0].rawRepresentation.base64EncodedString()
        let rawCandidates = try ServerToServerSignature.decodeSignature(raw).get()
        #expect(rawCandidates.contains { key.key.isValidSignature($0, for: Array("test\n".utf8)) })
    }

    // MARK: - Accepted variants

    @Test(arguments: [
        (Encoding.der, true, false), (.der, false, false), (.der, false, true), (.der, true, true),
        (.raw, true, false), (.raw, false, false), (.raw, false, true),
    ])
    func signatureEncodings(_ encoding: Encoding, _ padded: Bool, _ urlSafe: Bool) throws {
        let message = ServerToServerSignature.message(date: nowText, body: body, path: path)
        let signature = try signature(message, encoding, padded: padded, urlSafe: urlSafe)
        #expect(verify(date: nowText, signature: signature) == .valid)
    }

    @Test func emptyBodyHashedOrEmptyString() throws {
        let mistKit = try signature("\(nowText)::\(path)")
        #expect(verify(date: nowText, signature: mistKit, body: []) == .valid)
        let requestsCloudKit = try signature("\(nowText):47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:\(path)")
        #expect(verify(date: nowText, signature: requestsCloudKit, body: []) == .valid)
        // The empty hash component is only accepted for an empty body.
        let emptyHash = try signature("\(nowText)::\(path)")
        #expect(verify(date: nowText, signature: emptyHash).failure?.kind == .signatureMismatch)
    }

    @Test func pathWithOrWithoutQuery() throws {
        let withQuery = path + "?ckAPIToken=abc&x=1"
        let pathOnly = try signature(ServerToServerSignature.message(date: nowText, body: body, path: path))
        #expect(verify(date: nowText, signature: pathOnly, pathWithQuery: withQuery) == .valid)
        let full = try signature(ServerToServerSignature.message(date: nowText, body: body, path: withQuery))
        #expect(verify(date: nowText, signature: full, pathWithQuery: withQuery) == .valid)
        #expect(verify(date: nowText, signature: full).failure?.kind == .signatureMismatch)
    }

    @Test(arguments: [
        ("2016-07-13T03:16:51Z", 0.0), ("2016-07-13T03:16:51+00:00", 0), ("2016-07-13T03:16:51.123Z", 0.123),
        ("2016-07-13T03:16:51.5+00:00", 0.5), ("2016-07-13T05:16:51+02:00", 0), ("2016-07-13T03:16:51z", 0),
        ("2016-07-13T03:16:51+0000", 0), ("2016-07-12T23:16:51-04:00", 0),
    ])
    func dateFormats(_ date: String, _ fraction: Double) throws {
        let parsed = try #require(ServerToServerSignature.parseDate(date))
        #expect(abs(parsed.timeIntervalSince(now) - fraction) < 1e-6)
        let signature = try signature(ServerToServerSignature.message(date: date, body: body, path: path))
        #expect(verify(date: date, signature: signature) == .valid)
    }

    @Test func signProducesWholeSecondUTCDatesAndDERSignatures() throws {
        let signed = try ServerToServerSignature.sign(
            privateKeyPEM: privateKey.pemRepresentation, date: now.addingTimeInterval(0.75), body: body, path: path)
        #expect(signed.date == nowText)
        let der = try #require(Data(base64Encoded: signed.signature))
        #expect(der.first == 0x30)
        #expect(verify(date: signed.date, signature: signed.signature) == .valid)
        #expect(verify(date: signed.date, signature: signed.signature, key: privateKey.pemRepresentation) == .valid)
    }

    @Test func signAcceptsSEC1PEMWithParameters() throws {
        let pem = ecParametersPEM + "\n" + sec1PEM(privateKey)
        let signed = try ServerToServerSignature.sign(privateKeyPEM: pem, date: now, body: body, path: path)
        #expect(verify(date: signed.date, signature: signed.signature) == .valid)
        #expect(verify(date: signed.date, signature: signed.signature, key: pem) == .valid)
        #expect(throws: UbiquityError.self) {
            try ServerToServerSignature.sign(privateKeyPEM: publicKeyPEM, date: now, body: body, path: path)
        }
        #expect(throws: UbiquityError.self) {
            try ServerToServerSignature.sign(privateKeyPEM: "nope", date: now, body: body, path: path)
        }
    }

    // MARK: - Refusals

    @Test func tamperedRequestsAreRefused() throws {
        let signed = try ServerToServerSignature.sign(privateKeyPEM: privateKey.pemRepresentation, date: now,
                                                      body: body, path: path)
        var tampered = body
        tampered[tampered.count - 2] = UInt8(ascii: " ")
        #expect(verify(date: signed.date, signature: signed.signature, body: tampered).failure?.kind == .signatureMismatch)
        #expect(verify(date: signed.date, signature: signed.signature, path: path + "x").failure?.kind == .signatureMismatch)
        #expect(verify(date: "2016-07-13T03:16:52Z", signature: signed.signature).failure?.kind == .signatureMismatch)
        #expect(verify(date: "2016-07-13T03:16:51+00:00", signature: signed.signature).failure?.kind == .signatureMismatch)
        var flipped = try #require(Data(base64Encoded: signed.signature))
        flipped[flipped.count - 1] ^= 1
        #expect(verify(date: signed.date, signature: flipped.base64EncodedString()).failure?.kind == .signatureMismatch)
    }

    @Test func staleAndFutureDatesAreRefused() throws {
        let signed = try ServerToServerSignature.sign(privateKeyPEM: privateKey.pemRepresentation, date: now,
                                                      body: body, path: path)
        #expect(verify(date: signed.date, signature: signed.signature, now: now.addingTimeInterval(600)) == .valid)
        #expect(verify(date: signed.date, signature: signed.signature, now: now.addingTimeInterval(-600)) == .valid)
        let stale = verify(date: signed.date, signature: signed.signature, now: now.addingTimeInterval(601))
        #expect(stale.failure?.kind == .dateOutsideWindow)
        #expect(stale.failure?.reason.contains("601 s in the past") == true)
        let future = verify(date: signed.date, signature: signed.signature, now: now.addingTimeInterval(-3600))
        #expect(future.failure?.kind == .dateOutsideWindow)
        #expect(future.failure?.reason.contains("3600 s in the future") == true)
        let strict = ServerToServerSignature.verify(
            keyID: keyID, date: signed.date, signature: signed.signature, body: body, path: path,
            publicKeyPEM: publicKeyPEM, now: now.addingTimeInterval(31), allowedClockSkew: 30)
        #expect(strict.failure?.kind == .dateOutsideWindow)
    }

    @Test func wrongKeyIsRefused() throws {
        let other = P256.Signing.PrivateKey()
        let signed = try ServerToServerSignature.sign(privateKey: other, date: now, body: body, path: path)
        #expect(verify(date: signed.date, signature: signed.signature).failure?.kind == .signatureMismatch)
        #expect(verify(date: signed.date, signature: signed.signature, key: other.publicKey.pemRepresentation) == .valid)
    }

    @Test func missingHeadersUnknownAndMalformedKeys() throws {
        let signed = try ServerToServerSignature.sign(privateKey: privateKey, date: now, body: body, path: path)
        #expect(verify(date: signed.date, signature: signed.signature, keyID: .some(nil)).failure?.kind == .missingHeader)
        #expect(verify(date: signed.date, signature: signed.signature, keyID: "  ").failure?.kind == .missingHeader)
        #expect(verify(date: nil, signature: signed.signature).failure?.kind == .missingHeader)
        #expect(verify(date: signed.date, signature: "").failure?.kind == .missingHeader)
        let none = verify(date: nil, signature: nil, keyID: .some(nil))
        #expect(none.failure?.reason.contains(CloudKitAuthHeaders.signatureV1) == true)
        #expect(verify(date: signed.date, signature: signed.signature, key: .some(nil)).failure?.kind == .unknownKey)
        #expect(verify(date: signed.date, signature: signed.signature, key: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----").failure?.kind == .malformedKey)
        #expect(verify(date: signed.date, signature: signed.signature, key: "not a key").failure?.kind == .malformedKey)
        let p384 = P384.Signing.PrivateKey().publicKey.pemRepresentation
        #expect(verify(date: signed.date, signature: signed.signature, key: p384).failure?.kind == .malformedKey)
    }

    @Test(arguments: [
        "yesterday", "2016-07-13", "2016-07-13T03:16:51", "2016-07-13 03:16:51Z", "2016-13-13T03:16:51Z",
        "2016-02-30T03:16:51Z", "2016-07-13T24:00:00Z", "2016-07-13T03:16:51.Z", "2016-07-13T03:16:51+25:00",
        "2016-07-13T03:16:51Zjunk", "１０16-07-13T03:16:51Z",
    ])
    func badDates(_ date: String) throws {
        let signature = try signature(ServerToServerSignature.message(date: date, body: body, path: path))
        #expect(verify(date: date, signature: signature).failure?.kind == .badDate)
    }

    @Test(arguments: ["!!!!", "a", "AAAA", Data(repeating: 0x30, count: 60).base64EncodedString(),
                      Data(repeating: 1, count: 63).base64EncodedString(), String(repeating: "A", count: 400)])
    func badSignatureEncodings(_ signature: String) {
        #expect(verify(date: nowText, signature: signature).failure?.kind == .badSignatureEncoding)
    }

    @Test func rawAndDERAreTheSameSignature() throws {
        let message = ServerToServerSignature.message(date: nowText, body: body, path: path)
        let signature = try privateKey.signature(for: Array(message.utf8))
        let fromRaw = try P256.Signing.ECDSASignature(rawRepresentation: signature.rawRepresentation)
        #expect(fromRaw.derRepresentation == signature.derRepresentation)
        #expect(verify(date: nowText, signature: signature.rawRepresentation.base64EncodedString()) == .valid)
        #expect(verify(date: nowText, signature: signature.derRepresentation.base64EncodedString()) == .valid)
    }

    // MARK: - Keys

    @Test func keyFormats() throws {
        let expected = ServerToServerPublicKey(privateKey.publicKey)
        let publicKey = privateKey.publicKey
        let texts = [
            publicKey.pemRepresentation, privateKey.pemRepresentation, sec1PEM(privateKey),
            ecParametersPEM + "\n" + sec1PEM(privateKey), "  \n" + publicKey.pemRepresentation + "\n\n",
            publicKey.derRepresentation.base64EncodedString(), publicKey.x963Representation.base64EncodedString(),
            Hex.encode(publicKey.x963Representation), Hex.encode(publicKey.compressedRepresentation),
            publicKey.rawRepresentation.base64EncodedString(),
        ]
        for text in texts {
            #expect(try ServerToServerPublicKey(parsing: text) == expected, "\(text)")
        }
        #expect(try ServerToServerPublicKey(bytes: publicKey.x963Representation) == expected)
        #expect(try ServerToServerPublicKey(bytes: publicKey.derRepresentation) == expected)
        #expect(try ServerToServerPublicKey(bytes: publicKey.rawRepresentation) == expected)
        #expect(try ServerToServerPublicKey(bytes: publicKey.compressedRepresentation) == expected)
        #expect(try ServerToServerPublicKey(bytes: privateKey.derRepresentation) == expected)
        #expect(try ServerToServerPublicKey(parsing: expected.pemRepresentation) == expected)
        #expect(expected.fingerprint.count == 64)
        #expect(expected.fingerprint == SecretToken.digestHex(of: Array(publicKey.derRepresentation)))
    }

    @Test func keyParsingErrors() {
        let bad = [
            "", "   ", "hello world", "-----BEGIN PUBLIC KEY-----\nMFkw\n", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----",
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----",
            "-----BEGIN EC PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\nAAAA\n-----END EC PRIVATE KEY-----",
            P384.Signing.PrivateKey().pemRepresentation, Data(repeating: 4, count: 65).base64EncodedString(),
        ]
        for text in bad {
            #expect(throws: UbiquityError.self, "\(text)") { try ServerToServerPublicKey(parsing: text) }
        }
    }

    @Test func dateFormatting() {
        #expect(ServerToServerSignature.formatDate(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00Z")
        #expect(ServerToServerSignature.formatDate(Date(timeIntervalSince1970: 1_453_760_143.999)) == "2016-01-25T22:15:43Z")
        #expect(ServerToServerSignature.formatDate(Date(timeIntervalSince1970: 951_782_400)) == "2000-02-29T00:00:00Z")
        #expect(ServerToServerSignature.formatDate(Date(timeIntervalSince1970: -1)) == "1969-12-31T23:59:59Z")
        #expect(ServerToServerSignature.parseDate("2016-01-25T22:15:43Z") == Date(timeIntervalSince1970: 1_453_760_143))
        #expect(ServerToServerSignature.parseDate("2000-02-29T00:00:00Z") == Date(timeIntervalSince1970: 951_782_400))
        #expect(ServerToServerSignature.parseDate("2001-02-29T00:00:00Z") == nil)
        for seconds in stride(from: -100_000_000, to: 4_000_000_000, by: 12_345_677) {
            let date = Date(timeIntervalSince1970: TimeInterval(seconds))
            #expect(ServerToServerSignature.parseDate(ServerToServerSignature.formatDate(date)) == date)
        }
    }

    @Test func failureReasonsAreLogSafe() {
        let verdict = verify(date: "2016-07-13T03:16:51Z", signature: "AAAA", keyID: "evil\nkey", key: .some(nil))
        #expect(verdict.failure?.kind == .unknownKey)
        #expect(verdict.failure?.reason.contains("\n") == false)
    }

    // MARK: - Helpers

    /// `openssl ecparam -name prime256v1` output.
    let ecParametersPEM = "-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----"

    /// The SEC 1 `EC PRIVATE KEY` PEM `openssl ecparam -genkey` writes.
    func sec1PEM(_ key: P256.Signing.PrivateKey) -> String {
        var der: [UInt8] = [0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20]
        der += key.rawRepresentation
        der += [0xA0, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0xA1, 0x44, 0x03, 0x42, 0x00]
        der += key.publicKey.x963Representation
        let base64 = Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN EC PRIVATE KEY-----\n\(base64)\n-----END EC PRIVATE KEY-----\n"
    }
}

extension SecretToken {
    /// Hex SHA-256 of bytes (test helper mirroring `digest(_:)` for binary input).
    fileprivate static func digestHex(of bytes: [UInt8]) -> String {
        Hex.encode(SHA256.hash(data: bytes))
    }
}
