// SPDX-License-Identifier: Apache-2.0
// CloudKitAtlas: a port of Apple's CloudKitAtlas sample (a tour of the CloudKit API) to a
// command-line program that runs every operation the sample shows against a CloudKit Web
// Services server (`ubiq serve`), through the public Swift client only (`import Ubiquity`).
//
//   CloudKitAtlas --server URL --container ID --api-token T --web-auth-token W
//                 [--environment development|production] [--discover-email E] [--json]
//
// Prints one line per step, `ok STEP: DETAIL` or `FAIL STEP: REASON` (with --json, one JSON
// object per line: {"step", "ok", "detail"}), and exits 0 only when every step passed (1 when
// one failed, 64 for a bad command line). Everything it makes carries a per-run suffix and is
// deleted at the end, so it can run again and again against the same server.
import Foundation
import UbiquityCloudKit

/// The command line.
struct Options {
    var server: URL?
    var container: String?
    var apiToken: String?
    var webAuthToken: String?
    var environment: CloudKitEnvironment = .development
    var discoverEmail: String?
    var json = false

    static let usage = """
        usage: CloudKitAtlas --server URL --container ID --api-token T --web-auth-token W
                             [--environment development|production] [--discover-email E] [--json]
        """

    init(_ arguments: [String]) throws {
        var rest = arguments[...]
        func value(of flag: String) throws -> String {
            guard let value = rest.popFirst(), !value.hasPrefix("--") else { throw UbiquityError(.invalidArgument, "\(flag) needs a value") }
            return value
        }
        while let argument = rest.popFirst() {
            switch argument {
            case "--server":
                let text = try value(of: argument)
                guard let url = URL(string: text), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil else {
                    throw UbiquityError(.invalidArgument, "--server '\(text)' is not an http(s) URL")
                }
                server = url
            case "--container": container = try value(of: argument)
            case "--api-token": apiToken = try value(of: argument)
            case "--web-auth-token": webAuthToken = try value(of: argument)
            case "--environment":
                let text = try value(of: argument)
                guard let environment = CloudKitEnvironment(rawValue: text) else {
                    throw UbiquityError(.invalidArgument, "--environment '\(text)' is not development or production")
                }
                self.environment = environment
            case "--discover-email": discoverEmail = try value(of: argument)
            case "--json": json = true
            case "--help", "-h":
                Report.usage(Self.usage)
                exit(0)
            default:
                throw UbiquityError(.invalidArgument, "unknown argument '\(argument)'")
            }
        }
        for (flag, given) in [("--server", server != nil), ("--container", container != nil), ("--api-token", apiToken != nil),
                              ("--web-auth-token", webAuthToken != nil)] where !given {
            throw UbiquityError(.invalidArgument, "\(flag) is required")
        }
    }
}

let options: Options
do {
    options = try Options(Array(CommandLine.arguments.dropFirst()))
} catch {
    Report.error("\(error)")
    Report.error(Options.usage)
    exit(64)
}

let container = CloudContainer(identifier: options.container!, serverURL: options.server!, environment: options.environment,
                               credentials: .apiToken(options.apiToken!, webAuthToken: options.webAuthToken!))
let atlas = Atlas(container: container, report: Report(json: options.json), discoverEmail: options.discoverEmail)
await atlas.run()
exit(atlas.report.failures == 0 ? 0 : 1)
