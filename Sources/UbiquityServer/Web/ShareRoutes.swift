// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import UbiquityCore
import UbiquityWire

/// Share links: the owner's pages (`/share?id=`, `POST /shares/new`, `/shares`,
/// `POST /shares/revoke`, signed in, CSRF-checked) and the public ones (`/s/TOKEN`, its folder's
/// items and files, a password form when the link has one), opened without an account.
struct ShareRoutes: Sendable {
    let drive: DriveRoutes
    let shares: DriveShares

    /// The cookie that says a link's password was given.
    static let unlockCookie = "ubiq_share"

    func register(on router: Router<RecordsRequestContext>) {
        let routes = self
        router.get("/share") { request, _ in
            try await routes.drive.signedIn(request) { user in
                let item = try await routes.drive.actions.item(request.uri.queryParameters["id"].map(String.init) ?? "", context: user.context)
                var values: [String: Any] = ["csrf": user.csrf, "id": item.recordName, "name": item.name]
                if item.kind == .folder { values["folder"] = true }
                return DriveRoutes.page(DrivePages.render("share", title: "Share \(item.name)", user: user, values))
            }
        }
        router.post("/shares/new") { request, _ in
            try await routes.drive.form(request) { user, form in
                let item = try await routes.drive.actions.item(form["id"] ?? "", context: user.context)
                guard let days = Int(form["days"] ?? "") else { throw DriveRefusal(status: .badRequest, message: "Say after how many days the link expires.") }
                let token = try await routes.shares.create(recordName: item.recordName, days: days, password: form["password"], user: user, item: item)
                let expires = RecordsAuthenticator.now + Int64(days) * 86_400_000
                return DriveRoutes.page(DrivePages.render("shared", title: "A link to \(item.name)", user: user, [
                    "name": item.name, "url": "\(user.context.baseURL ?? "")/s/\(token)", "date": DriveRoutes.date(expires), "iso": DriveRoutes.iso(expires),
                ]))
            }
        }
        router.get("/shares") { request, _ in
            try await routes.drive.signedIn(request) { user in
                let now = RecordsAuthenticator.now
                let links: [[String: Any]] = try await routes.shares.links(of: user).map { link in
                    var row: [String: Any] = ["path": link.path, "digest": link.digest, "made": DriveRoutes.date(link.createdAt),
                                              "expires": DriveRoutes.date(link.expiresAt)]
                    if link.passwordHash != nil { row["password"] = true }
                    if link.expiresAt <= now { row["expired"] = true }
                    return row
                }
                var values: [String: Any] = ["csrf": user.csrf, "links": links]
                if request.uri.queryParameters["done"] == "revoked" { values["message"] = "The link was revoked: it opens nothing now." }
                return DriveRoutes.page(DrivePages.render("shares", title: "Shared links", user: user, values))
            }
        }
        router.post("/shares/revoke") { request, _ in
            try await routes.drive.form(request) { user, form in
                try await routes.shares.revoke(digest: form["digest"] ?? "", user: user)
                return DriveRoutes.redirect("/shares?done=revoked")
            }
        }
        router.get("/s/:token") { request, context in
            try await routes.publicPage(request, token: context.parameters.get("token") ?? "") { opened, base in
                try await routes.view(opened, base: base, relative: DriveRoutes.cleanPath(request.uri.queryParameters["path"].map(String.init) ?? ""))
            }
        }
        router.get("/s/:token/file") { request, context in
            try await routes.publicPage(request, token: context.parameters.get("token") ?? "") { opened, _ in
                let item = try await routes.shares.item(request.uri.queryParameters["id"].map(String.init), in: opened)
                guard item.kind == .file else { throw DriveRefusal(status: .badRequest, message: "Only files can be downloaded.") }
                return try routes.drive.content(name: item.name, inline: item.inline, asset: item.asset, container: DocumentItemRecord.container,
                                                baseURL: routes.drive.sessions.configuration.baseURL(request: request))
            }
        }
        router.post("/s/:token") { request, context in
            let token = context.parameters.get("token") ?? ""
            let base = "/s/\(WebEscaping.percentEncodeQueryValue(token))"
            do {
                let opened = try await routes.shares.open(token)
                let form = try await routes.drive.bodyBudget.collect(request, upTo: 16 * 1024, tooLarge: { HTTPError(.contentTooLarge) }) {
                    SignInRoutes.parseForm(String(buffer: $0))
                }
                let address = context.remoteAddress?.ipAddress ?? "?"
                let guardKey = "share:" + opened.link.digest
                if let seconds = try await routes.drive.sessions.signInGuard.begin(user: guardKey, address: address) {
                    throw DriveRefusal(status: .tooManyRequests, message: "Too many wrong passwords: try again in \(seconds) s.")
                }
                let right = try await routes.shares.check(password: form["password"] ?? "", for: opened.link)
                try await routes.drive.sessions.signInGuard.finish(user: guardKey, address: address, success: right)
                guard right else {
                    return DriveRoutes.page(DrivePages.render("sharepassword", title: "A shared link", user: nil,
                                                              ["base": base, "message": "That is not the link's password."]), status: .unauthorized)
                }
                var response = DriveRoutes.redirect(base)
                response.headers[.setCookie] = "\(Self.unlockCookie)=\(try await routes.shares.unlockProof(for: opened.link)); Path=\(base); HttpOnly; SameSite=Lax; Max-Age=86400"
                return response
            } catch {
                return DriveRoutes.failure(error, user: nil, back: "/")
            }
        }
    }

    /// Runs `body` for an open, unlocked link; else the page that says why not (or asks for the
    /// password).
    func publicPage(_ request: Request, token: String, _ body: (DriveShares.Opened, String) async throws -> Response) async throws -> Response {
        let base = "/s/\(WebEscaping.percentEncodeQueryValue(token))"
        do {
            let opened = try await shares.open(token)
            if opened.link.passwordHash != nil {
                let proof = try await shares.unlockProof(for: opened.link)
                let given = DriveSessions.cookie(named: Self.unlockCookie, in: request)
                guard let given, SecretToken.constantTimeEquals(given, proof) else {
                    return DriveRoutes.page(DrivePages.render("sharepassword", title: "A shared link", user: nil, ["base": base]))
                }
            }
            return try await body(opened, base)
        } catch {
            return DriveRoutes.failure(error, user: nil, back: "/")
        }
    }

    /// The public page of a link: the file, or the folder's items.
    func view(_ opened: DriveShares.Opened, base: String, relative: String) async throws -> Response {
        var values: [String: Any] = ["name": opened.item.name, "base": base]
        if opened.item.kind == .folder {
            values["folder"] = true
            let items = try await shares.list(opened, relative: relative)
            let components = relative.split(separator: "/").map(String.init)
            values["crumbs"] = components.indices.map { index -> [String: Any] in
                ["name": components[index], "query": WebEscaping.percentEncodeQueryValue(components[...index].joined(separator: "/"))]
            }
            values["items"] = items.map { item -> [String: Any] in
                let folder = item.kind == DocumentItemRecord.Kind.folder.rawValue
                var row: [String: Any] = ["id": item.recordName, "name": item.name, "size": folder ? "—" : DriveRoutes.size(item.size),
                                          "date": DriveRoutes.date(item.modified),
                                          "relative": WebEscaping.percentEncodeQueryValue(String(item.path.dropFirst(opened.item.path.count + 1)))]
                if folder { row["isFolder"] = true }
                return row
            }
        } else {
            values["file"] = true
            values["size"] = DriveRoutes.size(opened.item.size)
        }
        return DriveRoutes.page(DrivePages.render("public", title: opened.item.name, user: nil, values))
    }
}
