// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `ubiq serve` as a real process on port 0, and plain HTTP requests to it.
package enum ServeRig {
    package struct Server {
        package let process: Subprocess
        package let url: String

        /// A server already started.
        package init(process: Subprocess, url: String) {
            self.process = process
            self.url = url
        }
    }

    package static func startServer(_ device: Device, _ storeArguments: [String], extra: [String] = []) throws -> Server {
        let process = try device.start(Binaries.ubiq, ["serve", "--port", "0", "--log-level", "warning"] + storeArguments + extra)
        guard let line = process.waitForLine(containing: "listening on ") else {
            process.kill()
            throw DeviceError.didNotStart("ubiq serve")
        }
        let url = String(line[line.range(of: "listening on ")!.upperBound...])
        return Server(process: process, url: url)
    }

    package static func request(_ url: String, body: String? = nil) async throws -> (status: Int, body: String) {
        var request = URLRequest(url: URL(string: url)!)
        if let body {
            request.httpMethod = "POST"
            request.httpBody = Data(body.utf8)
            request.setValue("text/plain", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    package static func endpoint(_ server: Server, _ operation: String, api: String, web: String) -> String {
        "\(server.url)/database/1/iCloud.org.example.Serve/development/private/\(operation)?ckAPIToken=\(api)&ckWebAuthToken=\(web)"
    }
}
