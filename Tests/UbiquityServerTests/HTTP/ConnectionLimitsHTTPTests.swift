// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
import UbiquityServer

/// Issue 24, finding 5: idle connections and connections that never finish their request head
/// are closed after (test-sized) timeouts, and connections over the cap are refused with a 503
/// while the ones under it keep being served. Every wait is bounded (15 s receive timeouts) and
/// generous next to the 1 s timeouts configured.
@Suite struct ConnectionLimitsHTTPTests {
    @Test("an idle kept-alive connection is closed after the idle timeout")
    func idleConnectionClosed() async throws {
        let server = try await ServerFixture.start(.sqlite, configuration: RecordsServerConfiguration(idleTimeout: 1, requestHeaderTimeout: 60))
        defer { Task { await server.stop() } }
        let connection = try RawConnection.to(server.url)
        #expect(try await connection.healthz()?.status == 200)
        #expect(await connection.closedByServer())
    }

    @Test("a connection that sends nothing, or half a request head, is closed after the header timeout")
    func halfSentHeadClosed() async throws {
        // the idle timeout is long: only the header timeout can close these
        let server = try await ServerFixture.start(.sqlite, configuration: RecordsServerConfiguration(idleTimeout: 600, requestHeaderTimeout: 1))
        defer { Task { await server.stop() } }
        let silent = try RawConnection.to(server.url)
        #expect(await silent.closedByServer())

        let half = try RawConnection.to(server.url)
        try half.send("GET /healthz HTTP/1.1\r\nHost: localhost\r\n")
        #expect(await half.closedByServer())

        // a client trickling its header a byte at a time is closed too, though it is never idle
        let trickle = try RawConnection.to(server.url)
        try trickle.send("GET /healthz HTTP/1.1\r\nX-Slow: ")
        var closed = false
        for _ in 0..<100 {
            do {
                try trickle.send("a")
            } catch {
                closed = true
                break
            }
            try await Task.sleep(for: .milliseconds(150))
        }
        #expect(closed)

        // on a kept-alive connection, the next request's head has the same deadline
        let kept = try RawConnection.to(server.url)
        #expect(try await kept.healthz()?.status == 200)
        try kept.send("GET /healthz HTTP/1.1\r\nHost: loc")
        #expect(await kept.closedByServer())
    }

    @Test("the header timeout ends with the head: a slow body, and a kept-alive connection's next request, are served")
    func headerTimeoutDoesNotCutRequests() async throws {
        let server = try await ServerFixture.start(.sqlite, configuration: RecordsServerConfiguration(idleTimeout: 600, requestHeaderTimeout: 1))
        defer { Task { await server.stop() } }
        let connection = try RawConnection.to(server.url)
        let body = Array(#"{"query":{"recordType":"Note"}}"#.utf8)
        try connection.send("POST \(server.path("public", "records/query"))?ckAPIToken=\(ServerFixture.encode(server.apiToken)) HTTP/1.1\r\n"
                            + "Host: localhost\r\nContent-Type: text/plain\r\nContent-Length: \(body.count)\r\n\r\n")
        try await Task.sleep(for: .milliseconds(1500))  // past the header timeout: the head is in, so this is fine
        try connection.send(Array(body[..<10]))
        try await Task.sleep(for: .milliseconds(1000))
        try connection.send(Array(body[10...]))
        #expect(try await connection.answer()?.status == 200)
        // the connection stays usable for the next request, waiting between them
        try await Task.sleep(for: .milliseconds(1500))
        #expect(try await connection.healthz()?.status == 200)
    }

    @Test("connections over the cap are answered 503 and closed; those under it keep being served")
    func connectionsOverTheCapRefused() async throws {
        let server = try await ServerFixture.start(.sqlite, configuration: RecordsServerConfiguration(maximumConnections: 3))
        defer { Task { await server.stop() } }
        // three connections, each served once (so each is surely counted)
        var open: [RawConnection] = []
        for _ in 0..<3 {
            let connection = try RawConnection.to(server.url)
            #expect(try await connection.healthz()?.status == 200)
            open.append(connection)
        }
        // the fourth is refused at once, without sending anything
        let over = try RawConnection.to(server.url)
        let refusal = try #require(try await over.answer())
        #expect(refusal.status == 503)
        #expect(refusal.json["serverErrorCode"]?.stringValue == "TRY_AGAIN_LATER")
        #expect(refusal.headers["connection"] == "close")
        #expect(refusal.headers["retry-after"] == "1")
        #expect(await over.closedByServer())
        // one that sends its request still gets the 503
        let asking = try RawConnection.to(server.url)
        try asking.send("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try await asking.answer()?.status == 503)
        // the connections under the cap are served as before
        for connection in open { #expect(try await connection.healthz()?.body == "ok\n") }
        // once one closes, a new connection is served again
        open.removeFirst().hangUp()
        var served = false
        for _ in 0..<100 where !served {
            let connection = try RawConnection.to(server.url)
            served = try await connection.healthz()?.status == 200
            if !served { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(served)
    }
}
