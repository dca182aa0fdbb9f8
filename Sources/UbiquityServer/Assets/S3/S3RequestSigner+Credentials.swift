// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

extension S3RequestSigner.Credentials {
    /// A profile of an AWS shared credentials file (`~/.aws/credentials`: `[profile]` sections of
    /// `aws_access_key_id`, `aws_secret_access_key` and `aws_session_token` lines).
    /// - Throws: `notFound` when the file cannot be read; `invalidArgument` naming the profile or
    ///   key that is missing.
    package init(file path: String, profile: String) throws {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw UbiquityError(.notFound, "the S3 credentials file \(path) cannot be read")
        }
        var section: String?
        var values: [String: String] = [:]
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                section = line.dropFirst().dropLast().trimmingCharacters(in: .whitespaces)
                continue
            }
            guard section == profile, let equals = line.firstIndex(of: "=") else { continue }
            values[line[..<equals].trimmingCharacters(in: .whitespaces).lowercased()] = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        }
        guard let key = values["aws_access_key_id"], !key.isEmpty, let secret = values["aws_secret_access_key"], !secret.isEmpty else {
            throw UbiquityError(.invalidArgument, "the S3 credentials file \(path) has no aws_access_key_id and aws_secret_access_key in profile [\(profile)]")
        }
        self.init(accessKeyID: key, secretAccessKey: secret, sessionToken: values["aws_session_token"].flatMap { $0.isEmpty ? nil : $0 })
    }

    /// The credentials as AWS's tools find them: `file` when given; else `AWS_ACCESS_KEY_ID` and
    /// `AWS_SECRET_ACCESS_KEY` (with `AWS_SESSION_TOKEN`); else the shared credentials file
    /// (`AWS_SHARED_CREDENTIALS_FILE`, or `~/.aws/credentials`) — the profile `AWS_PROFILE`, or
    /// `default`.
    /// - Throws: `invalidArgument` saying where credentials were looked for.
    package static func resolve(file: String?, environment: [String: String]) throws -> Self {
        let profile = environment["AWS_PROFILE"].flatMap { $0.isEmpty ? nil : $0 } ?? "default"
        if let file { return try Self(file: file, profile: profile) }
        if environment["AWS_ACCESS_KEY_ID"].map({ !$0.isEmpty }) == true { return try Self(environment: environment) }
        let shared = environment["AWS_SHARED_CREDENTIALS_FILE"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.aws/credentials"
        guard FileManager.default.fileExists(atPath: shared) else {
            throw UbiquityError(.invalidArgument, "S3 blob storage needs an access key: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give --s3-credentials FILE (no \(shared) either)")
        }
        return try Self(file: shared, profile: profile)
    }
}
