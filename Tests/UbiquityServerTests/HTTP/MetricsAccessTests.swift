// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Foundation
import NIOCore
import Testing
import UbiquityServer

/// `/metrics` (issue 24's review, low): clients on this machine only, or a bearer token.
@Suite struct MetricsAccessTests {
    @Test func loopbackOnlyWithoutAToken() {
        let access = MetricsAccess(token: nil)
        for address in ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"] {
            #expect(access.allows(address: address, authorization: nil), "\(address)")
        }
        for address in ["10.0.0.5", "192.168.1.2", "::ffff:10.0.0.5", "fe80::1", "1127.0.0.1", "127.0.0", "localhost"] {
            #expect(!access.allows(address: address, authorization: nil), "\(address)")
        }
        #expect(!access.allows(address: nil, authorization: nil))
    }

    @Test func aTokenIsAskedOfEveryone() {
        let access = MetricsAccess(token: "s3cret-metrics-token")
        #expect(!access.allows(address: "127.0.0.1", authorization: nil))
        #expect(!access.allows(address: "10.0.0.5", authorization: "Bearer wrong"))
        #expect(!access.allows(address: "10.0.0.5", authorization: "s3cret-metrics-token"))
        #expect(access.allows(address: "10.0.0.5", authorization: "Bearer s3cret-metrics-token"))
    }

    static func get(_ url: String, authorization: String? = nil) async throws -> (status: Int, body: String) {
        var request = HTTPClientRequest(url: url)
        if let authorization { request.headers.add(name: "Authorization", value: authorization) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), String(buffer: body))
    }

    /// A real server: a loopback client reads the metrics; with a token, only with the token.
    @Test func theServerAsksForItsToken() async throws {
        let open = try await ServerFixture.start(.sqlite)
        #expect(try await Self.get(open.url + "/metrics").status == 200)
        await open.stop()

        var configuration = RecordsServerConfiguration()
        configuration.metricsToken = "s3cret-metrics-token"
        let guarded = try await ServerFixture.start(.sqlite, configuration: configuration)
        defer { Task { await guarded.stop() } }
        let refused = try await Self.get(guarded.url + "/metrics")
        #expect(refused.status == 401)
        #expect(refused.body.contains("Bearer"))
        #expect(try await Self.get(guarded.url + "/metrics", authorization: "Bearer nope").status == 401)
        #expect(try await Self.get(guarded.url + "/metrics", authorization: "Bearer s3cret-metrics-token").status == 200)
    }
}
