// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Testing
import UbiquityCore
@testable import UbiquityServer

/// Signature Version 4 against the examples AWS publishes in the S3 API reference
/// ("Examples: Signature Calculations in AWS Signature Version 4", Authorization header):
/// access key `AKIAIOSFODNN7EXAMPLE`, bucket `examplebucket`, 2013-05-24 00:00:00 UTC, us-east-1.
@Suite struct S3RequestSignerTests {
    static let signer = S3RequestSigner(credentials: .init(accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
                                        region: "us-east-1")
    static let date = Date(timeIntervalSince1970: 1_369_353_600)  // 2013-05-24T00:00:00Z
    static let host = "examplebucket.s3.amazonaws.com"

    static func signature(_ headers: [(String, String)]) -> String? {
        headers.first { $0.0 == "authorization" }?.1.components(separatedBy: "Signature=").last
    }

    @Test func getObjectWithARange() {
        let headers = Self.signer.signedHeaders(method: "GET", host: Self.host, path: "/test.txt", headers: [("Range", "bytes=0-9")],
                                                payloadHash: S3RequestSigner.emptyPayloadHash, date: Self.date)
        #expect(headers.first { $0.0 == "x-amz-date" }?.1 == "20130524T000000Z")
        #expect(headers.first { $0.0 == "authorization" }?.1 == """
            AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, \
            SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, \
            Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41
            """)
        // the canonical request's hash as the example gives it
        let (request, _) = S3RequestSigner.canonicalRequest(method: "GET", path: "/test.txt", query: [],
                                                           headers: [("host", Self.host), ("range", "bytes=0-9"),
                                                                     ("x-amz-content-sha256", S3RequestSigner.emptyPayloadHash),
                                                                     ("x-amz-date", "20130524T000000Z")],
                                                           payloadHash: S3RequestSigner.emptyPayloadHash)
        #expect(Hex.encode(sha256(request)) == "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972")
    }

    @Test func putObjectWithAnEncodedKeyAndAStorageClass() {
        let body = Hex.encode(sha256("Welcome to Amazon S3."))
        #expect(body == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072")
        let headers = Self.signer.signedHeaders(method: "PUT", host: Self.host, path: "/test$file.text",
                                                headers: [("Date", "Fri, 24 May 2013 00:00:00 GMT"), ("x-amz-storage-class", "REDUCED_REDUNDANCY")],
                                                payloadHash: body, date: Self.date)
        #expect(Self.signature(headers) == "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")
    }

    @Test func listObjectsWithASortedQuery() {
        let headers = Self.signer.signedHeaders(method: "GET", host: Self.host, path: "/", query: [("prefix", "J"), ("max-keys", "2")],
                                                payloadHash: S3RequestSigner.emptyPayloadHash, date: Self.date)
        #expect(Self.signature(headers) == "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")
    }

    @Test func temporaryCredentialsSignTheirToken() {
        var signer = Self.signer
        signer.credentials.sessionToken = "token/with+signs"
        let headers = signer.signedHeaders(method: "GET", host: Self.host, path: "/test.txt", payloadHash: S3RequestSigner.emptyPayloadHash, date: Self.date)
        #expect(headers.first { $0.0 == "x-amz-security-token" }?.1 == "token/with+signs")
        #expect(headers.first { $0.0 == "authorization" }?.1.contains("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,") == true)
        #expect(Self.signature(headers) != Self.signature(Self.signer.signedHeaders(method: "GET", host: Self.host, path: "/test.txt",
                                                                                    payloadHash: S3RequestSigner.emptyPayloadHash, date: Self.date)))
    }

    @Test func encodingAndCredentialsFromTheEnvironment() throws {
        #expect(S3RequestSigner.encode("a b/é~._-") == "a%20b%2F%C3%A9~._-")
        #expect(S3RequestSigner.canonicalRequest(method: "GET", path: "/bucket/a b/c", query: [("b", "2"), ("a", "x y"), ("a", "1")], headers: [("Host", " h  x ")],
                                                 payloadHash: "p").request == "GET\n/bucket/a%20b/c\na=1&a=x%20y&b=2\nhost:h x\n\nhost\np")
        let credentials = try S3RequestSigner.Credentials(environment: ["AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": ""])
        #expect(credentials == .init(accessKeyID: "id", secretAccessKey: "secret"))
        #expect { try S3RequestSigner.Credentials(environment: ["AWS_ACCESS_KEY_ID": "id"]) } throws: { "\($0)".contains("AWS_SECRET_ACCESS_KEY is not set") }
        #expect { try S3RequestSigner.Credentials(environment: ["AWS_SECRET_ACCESS_KEY": "s"]) } throws: { "\($0)".contains("AWS_ACCESS_KEY_ID is not set") }
    }
}

/// The SHA-256 of a string's UTF-8.
private func sha256(_ text: String) -> [UInt8] {
    Array(SHA256.hash(data: Data(text.utf8)))
}
