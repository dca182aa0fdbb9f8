// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import UbiquityCore
import UbiquityWire

/// The web's Drive at `/`: the signed-in user's synced folder in a browser — browse (paged),
/// search by name, upload (the asset path, with progress), download, rename, move, new folder,
/// delete, versions and Recently Deleted. Server-rendered (``DrivePages``); every form that
/// changes something carries the session's CSRF token; everything reaches the devices as any
/// other change does (``DriveActions``, ``DocumentHistory``).
struct DriveRoutes: Sendable {
    let sessions: DriveSessions
    let actions: DriveActions
    let history: DocumentHistory
    let assets: AssetService?
    /// The server-wide limit on collected request bodies.
    let bodyBudget: RequestBodyBudget

    /// Items per page of a folder.
    static let pageSize = 200

    func register(on router: Router<RecordsRequestContext>) {
        let routes = self
        router.get("/drive/static/drive.css") { _, _ in Self.asset(DriveStatic.css, type: "text/css; charset=utf-8") }
        router.get("/drive/static/drive.js") { _, _ in Self.asset(DriveStatic.script, type: "text/javascript; charset=utf-8") }
        router.get("/signin") { request, _ in
            let next = Self.nextPath(request.uri.queryParameters["next"].map(String.init))
            if try await routes.sessions.user(of: request) != nil { return Self.redirect(next ?? "/") }
            return Self.page(DrivePages.render("signin", title: "Sign in", user: nil, next.map { ["next": $0] } ?? [:]))
        }
        router.post("/signin") { request, context in try await routes.signIn(request, context: context) }
        router.get("/") { request, _ in try await routes.signedIn(request) { user in try await routes.files(request, user: user) } }
        router.get("/drive/file/:id") { request, context in
            try await routes.signedIn(request) { user in try await routes.download(context.parameters.get("id") ?? "", user: user) }
        }
        router.get("/versions") { request, _ in try await routes.signedIn(request) { user in try await routes.versions(request, user: user) } }
        router.get("/versions/file") { request, _ in
            try await routes.signedIn(request) { user in try await routes.downloadVersion(request, user: user) }
        }
        router.get("/trash") { request, _ in try await routes.signedIn(request) { user in try await routes.trash(request, user: user) } }
        router.post("/signout") { request, _ in
            try await routes.form(request) { user, _ in
                try await routes.sessions.signOut(user)
                var response = Self.redirect("/signin")
                response.headers[.setCookie] = routes.sessions.setCookie(nil, request: request)
                return response
            }
        }
        router.post("/drive/folder") { request, _ in
            try await routes.form(request) { user, form in
                let parent = form["parent"] ?? ""
                try await routes.actions.makeFolder(named: form["name"] ?? "", in: parent, context: user.context)
                return Self.redirect(Self.folderURL(parent, done: "folder"))
            }
        }
        router.post("/drive/rename") { request, _ in
            try await routes.form(request) { user, form in
                let item = try await routes.actions.item(form["id"] ?? "", context: user.context)
                try await routes.actions.rename(item.recordName, to: form["name"] ?? "", context: user.context)
                return Self.redirect(Self.folderURL(item.parent, done: "renamed"))
            }
        }
        router.post("/drive/move") { request, _ in
            try await routes.form(request) { user, form in
                let item = try await routes.actions.item(form["id"] ?? "", context: user.context)
                let folder = (form["folder"] ?? "").split(separator: "/").joined(separator: "/")
                try await routes.actions.move(item.recordName, into: folder, context: user.context)
                return Self.redirect(Self.folderURL(item.parent, done: "moved"))
            }
        }
        router.post("/drive/delete") { request, _ in
            try await routes.form(request) { user, form in
                let item = try await routes.actions.item(form["id"] ?? "", context: user.context)
                try await routes.actions.delete(item.recordName, context: user.context)
                return Self.redirect(Self.folderURL(item.parent, done: "deleted"))
            }
        }
        router.post("/drive/upload") { request, _ in try await routes.json(request) { user, body in try await routes.startUpload(body, user: user) } }
        router.post("/drive/uploaded") { request, _ in try await routes.json(request) { user, body in try await routes.finishUpload(body, user: user) } }
        router.post("/versions/restore") { request, _ in
            try await routes.form(request) { user, form in
                guard let version = form["version"].flatMap({ Int64($0) }) else { throw DriveRefusal(status: .badRequest, message: "No version was chosen.") }
                _ = try await routes.history.restoreVersion(.object(["versionID": .number(Double(version))]), context: user.context)
                return Self.redirect("/versions?id=\(WebEscaping.percentEncodeQueryValue(form["id"] ?? ""))&done=restored")
            }
        }
        router.post("/trash/restore") { request, _ in
            try await routes.form(request) { user, form in
                _ = try await routes.history.restoreTrashed(.object(["ids": .array([.number(Double(Int64(form["id"] ?? "") ?? 0))])]), context: user.context)
                return Self.redirect("/trash?done=restored")
            }
        }
        router.post("/trash/delete") { request, _ in
            try await routes.form(request) { user, form in
                _ = try await routes.history.deleteTrashed(.object(["ids": .array([.number(Double(Int64(form["id"] ?? "") ?? 0))])]), context: user.context)
                return Self.redirect("/trash?done=deleted")
            }
        }
    }

    // MARK: Pages

    func signIn(_ request: Request, context: RecordsRequestContext) async throws -> Response {
        let form = try await bodyBudget.collect(request, upTo: 64 * 1024, tooLarge: { HTTPError(.contentTooLarge) }) { SignInRoutes.parseForm(String(buffer: $0)) }
        let name = form["user"] ?? ""
        switch try await sessions.signIn(user: name, password: form["password"] ?? "", address: context.remoteAddress?.ipAddress ?? "?") {
        case .success(let cookie):
            var response = Self.redirect(Self.nextPath(form["next"]) ?? "/")
            response.headers[.setCookie] = sessions.setCookie(cookie, request: request)
            return response
        case .failure(let refusal):
            var values: [String: Any] = ["message": refusal.message, "userName": name]
            if let next = Self.nextPath(form["next"]) { values["next"] = next }
            return Self.page(DrivePages.render("signin", title: "Sign in", user: nil, values), status: refusal.status)
        }
    }

    func files(_ request: Request, user: DriveUser) async throws -> Response {
        let query = request.uri.queryParameters
        let search = query["q"].map(String.init)?.trimmingCharacters(in: .whitespaces) ?? ""
        let path = Self.cleanPath(query["path"].map(String.init) ?? "")
        let page = max(1, query["page"].flatMap { Int(String($0)) } ?? 1)
        let start = (page - 1) * Self.pageSize
        let shown: [DriveIndexRow]
        let total: Int
        if !search.isEmpty {
            let found = try await actions.search(search, limit: start + Self.pageSize + 1, context: user.context)
            shown = Array(found.dropFirst(start).prefix(Self.pageSize))
            total = found.count
        } else {
            if !path.isEmpty, try await actions.liveItem(at: path, context: user.context)?.kind != .folder {
                throw DriveRefusal(status: .notFound, message: "There is no folder '\(path)' in your Drive.")
            }
            (shown, total) = try await actions.page(of: path, offset: start, limit: Self.pageSize, context: user.context)
        }
        let components = path.split(separator: "/").map(String.init)
        let crumbs: [[String: Any]] = components.indices.map { index in
            ["name": components[index], "query": WebEscaping.percentEncodeQueryValue(components[...index].joined(separator: "/"))]
        }
        func pageURL(_ number: Int) -> String {
            search.isEmpty ? "/?path=\(WebEscaping.percentEncodeQueryValue(path))&page=\(number)" : "/?q=\(WebEscaping.percentEncodeQueryValue(search))&page=\(number)"
        }
        var values: [String: Any] = [
            "csrf": user.csrf, "path": path, "folderName": path.isEmpty ? "your Drive" : components.last ?? path, "crumbs": crumbs,
            "items": shown.map { Self.row($0, showFolder: !search.isEmpty) },
            "caption": search.isEmpty ? "\(total) item\(total == 1 ? "" : "s")"
                : total > start + Self.pageSize ? "More than \(start + Self.pageSize) found for “\(search)”" : "\(total) found for “\(search)”",
        ]
        if !search.isEmpty { values["search"] = search }
        if page > 1 { values["previous"] = pageURL(page - 1) }
        if start + Self.pageSize < total { values["next"] = pageURL(page + 1) }
        if let done = query["done"].flatMap({ Self.doneMessages[String($0)] }) { values["message"] = done }
        return Self.page(DrivePages.render("files", title: path.isEmpty ? "Drive" : components.last ?? path, user: user, values))
    }

    func versions(_ request: Request, user: DriveUser) async throws -> Response {
        let query = request.uri.queryParameters
        let item = try await actions.item(query["id"].map(String.init) ?? "", context: user.context)
        let answer = try await history.versions(.object(["recordName": .string(item.recordName)]), context: user.context)
        let versions: [[String: Any]] = (answer.objectValue?["versions"]?.arrayValue ?? []).compactMap(\.objectValue).map { version in
            let savedAt = Int64(version["savedAt"]?.doubleValue ?? 0)
            var row: [String: Any] = [
                "id": Int64(version["id"]?.doubleValue ?? 0), "record": item.recordName, "by": version["savedBy"]?.stringValue ?? "",
                "size": Self.size(Int64(version["size"]?.doubleValue ?? 0)), "date": Self.date(savedAt), "iso": Self.iso(savedAt),
            ]
            if version["current"] == .bool(true) { row["current"] = true }
            return row
        }
        var values: [String: Any] = ["csrf": user.csrf, "name": item.name, "versions": versions,
                                     "folderQuery": WebEscaping.percentEncodeQueryValue(item.parent)]
        if query["done"] == "restored" { values["message"] = "The version was restored; every device gets it." }
        return Self.page(DrivePages.render("versions", title: "Versions of \(item.name)", user: user, values))
    }

    func trash(_ request: Request, user: DriveUser) async throws -> Response {
        let answer = try await history.trash(context: user.context)
        let items: [[String: Any]] = (answer.objectValue?["items"]?.arrayValue ?? []).compactMap(\.objectValue).map { item in
            let deletedAt = Int64(item["deletedAt"]?.doubleValue ?? 0)
            let path = item["path"]?.stringValue ?? ""
            var row: [String: Any] = ["id": Int64(item["id"]?.doubleValue ?? 0), "path": path, "name": path.split(separator: "/").last.map(String.init) ?? path,
                                      "by": item["deletedBy"]?.stringValue ?? "", "date": Self.date(deletedAt), "iso": Self.iso(deletedAt)]
            if let contains = item["contains"]?.doubleValue, contains > 0 { row["contains"] = Int(contains) }
            return row
        }
        var values: [String: Any] = ["csrf": user.csrf, "items": items, "days": history.trashDays]
        if let done = request.uri.queryParameters["done"] {
            values["message"] = done == "restored" ? "Restored on every device." : "Deleted for good."
        }
        return Self.page(DrivePages.render("trash", title: "Recently Deleted", user: user, values))
    }

    // MARK: Content

    func download(_ recordName: String, user: DriveUser) async throws -> Response {
        let item = try await actions.item(recordName, context: user.context)
        guard item.kind == .file else { throw DriveRefusal(status: .badRequest, message: "Only files can be downloaded.") }
        return try content(name: item.name, inline: item.inline, asset: item.asset, container: user.context.container, baseURL: user.context.baseURL)
    }

    func downloadVersion(_ request: Request, user: DriveUser) async throws -> Response {
        guard let id = request.uri.queryParameters["id"].flatMap({ Int64(String($0)) }) else {
            throw DriveRefusal(status: .badRequest, message: "No version was chosen.")
        }
        let key = try DocumentHistory.documentsKey(user.context)
        let version = try await history.engine.store.read { tx -> StoredItemVersion? in
            guard let database = try await tx.database(key) else { return nil }
            return try await tx.historyStore().itemVersion(database: database.id, id: id)
        }
        guard let version else { throw DriveRefusal(status: .notFound, message: "There is no such version.") }
        let fields = try StoredRecord.decodeFields(version.fieldsJSON)
        var inline: Data?
        if case .bytes(let data) = fields[DocumentItemRecord.Field.inline] { inline = data }
        let name = version.path.split(separator: "/").last.map(String.init) ?? "file"
        return try content(name: name, inline: inline, asset: fields[DocumentItemRecord.Field.content]?.assetValue, container: user.context.container,
                           baseURL: user.context.baseURL)
    }

    /// A file's content: inline bytes as they are, an asset by a redirect to its signed download URL.
    func content(name: String, inline: Data?, asset: WireAsset?, container: String, baseURL: String?) throws -> Response {
        if let asset, let checksum = asset.fileChecksum, let size = asset.size, let assets, let base = baseURL {
            let url = assets.downloadURL(fileChecksum: checksum, size: size, container: container, baseURL: base)
            return Self.redirect(url.replacingOccurrences(of: "${f}", with: WebEscaping.percentEncodeQueryValue(name)))
        }
        let bytes = inline ?? Data()
        return Response(status: .ok, headers: [
            .contentType: "application/octet-stream", .contentDisposition: "attachment; filename*=UTF-8''\(WebEscaping.percentEncodeQueryValue(name))",
            .cacheControl: "no-store", .init("X-Content-Type-Options")!: "nosniff",
        ], body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// `POST /drive/upload` `{"folder", "name"}`: an asset upload URL for a new item's content
    /// (`{"url", "recordName"}`); the page sends the file there, then to `/drive/uploaded`.
    func startUpload(_ body: JSONValue, user: DriveUser) async throws -> JSONValue {
        let reader = try WireReader(body, path: "")
        try DriveActions.check(name: try reader.requiredString("name"))
        let recordName = UUID().uuidString.lowercased()
        let answer = try await history.engine.requestAssetUploads(.object([
            "zoneID": .object(["zoneName": .string(DocumentItemRecord.zoneName)]),
            "tokens": .array([.object(["recordType": .string(DocumentItemRecord.recordType), "fieldName": .string(DocumentItemRecord.Field.content),
                                       "recordName": .string(recordName)])]),
        ]), context: user.context)
        guard let url = answer.objectValue?["tokens"]?.arrayValue?.first?.objectValue?["url"]?.stringValue else {
            throw WireError(.internalError, "no upload URL")
        }
        return .object(["url": .string(url), "recordName": .string(recordName)])
    }

    /// `POST /drive/uploaded` `{"folder", "name", "recordName", "asset", "modified"}`: saves the
    /// uploaded file as an item (`{"path"}`).
    func finishUpload(_ body: JSONValue, user: DriveUser) async throws -> JSONValue {
        let reader = try WireReader(body, path: "")
        var asset: WireAsset?
        if let value = try reader.object("asset") {
            asset = WireAsset(fileChecksum: try value.string("fileChecksum"), size: try value.integer("size"), receipt: try value.string("receipt"))
        }
        let path = try await actions.saveUpload(named: try reader.requiredString("name"), in: Self.cleanPath(try reader.string("folder") ?? ""), asset: asset,
                                                recordName: try reader.requiredString("recordName"), modified: try reader.integer("modified"),
                                                context: user.context)
        return .object(["path": .string(path)])
    }

    // MARK: Plumbing

    /// Runs `body` for the signed-in user; without one, a GET goes to the sign-in page.
    func signedIn(_ request: Request, _ body: (DriveUser) async throws -> Response) async throws -> Response {
        guard let user = try await sessions.user(of: request) else { return Self.redirect("/signin") }
        do {
            return try await body(user)
        } catch {
            return Self.failure(error, user: user, back: "/")
        }
    }

    /// A form post of the signed-in user, CSRF-checked.
    func form(_ request: Request, _ body: (DriveUser, [String: String]) async throws -> Response) async throws -> Response {
        guard let user = try await sessions.user(of: request) else {
            return Self.failure(DriveRefusal(status: .unauthorized, message: "Your session has ended: sign in again."), user: nil, back: "/signin")
        }
        let form = try await bodyBudget.collect(request, upTo: 64 * 1024, tooLarge: { HTTPError(.contentTooLarge) }) { SignInRoutes.parseForm(String(buffer: $0)) }
        do {
            try sessions.checkCSRF(user, given: form["csrf"])
            return try await body(user, form)
        } catch {
            return Self.failure(error, user: user, back: request.headers[.referer].flatMap { Self.sameSitePath($0) } ?? "/")
        }
    }

    /// A JSON post of the page's script, CSRF-checked (`X-CSRF-Token`); errors as `{"reason"}`.
    func json(_ request: Request, _ body: (DriveUser, JSONValue) async throws -> JSONValue) async throws -> Response {
        do {
            guard let user = try await sessions.user(of: request) else {
                throw DriveRefusal(status: .unauthorized, message: "Your session has ended: sign in again.")
            }
            try sessions.checkCSRF(user, given: request.headers[HTTPField.Name("X-CSRF-Token")!])
            let value = try await bodyBudget.collect(request, upTo: 64 * 1024, tooLarge: { HTTPError(.contentTooLarge) }) { buffer in
                try JSONValue.parse(Data(buffer: buffer))
            }
            let answer = try await body(user, value)
            return Response(status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
                            body: .init(byteBuffer: ByteBuffer(bytes: answer.serializedBytes())))
        } catch {
            let (status, message) = Self.describe(error)
            return Response(status: status, headers: [.contentType: "application/json", .cacheControl: "no-store"],
                            body: .init(byteBuffer: ByteBuffer(bytes: JSONValue.object(["reason": .string(message)]).serializedBytes())))
        }
    }

    static let doneMessages = ["folder": "The folder was made.", "renamed": "Renamed.", "moved": "Moved.",
                               "deleted": "Deleted: it is in Recently Deleted for a while."]

    static func failure(_ error: any Error, user: DriveUser?, back: String) -> Response {
        let (status, message) = describe(error)
        return page(DrivePages.render("message", title: "Not done", user: user, ["heading": "That did not work", "message": message, "back": back]),
                    status: status)
    }

    static func describe(_ error: any Error) -> (HTTPResponse.Status, String) {
        switch error {
        case let refusal as DriveRefusal:
            return (refusal.status, refusal.message)
        case let error as UbiquityError:
            switch error.code {
            case .invalidArgument: return (.badRequest, error.message)
            case .notFound: return (.notFound, error.message)
            case .conflict, .alreadyExists: return (.conflict, error.message)
            case .permissionDenied: return (.forbidden, error.message)
            default: return (.internalServerError, error.message)
            }
        case let wire as WireError:
            switch wire.code {
            case .notFound, .zoneNotFound: return (.notFound, wire.reason)
            case .exists, .conflict: return (.conflict, wire.reason)
            case .quotaExceeded: return (.init(code: 507, reasonPhrase: "Insufficient Storage"), wire.reason)
            case .badRequest: return (.badRequest, wire.reason)
            default: return (.internalServerError, wire.reason)
            }
        default:
            return (.internalServerError, "\(error)")
        }
    }

    /// A path from a query: no empty, `.` or `..` components.
    static func cleanPath(_ text: String) -> String {
        text.split(separator: "/").filter { $0 != "." && $0 != ".." }.joined(separator: "/")
    }

    /// Where the sign-in page goes once signed in: a path of this site (`/console/…`), never
    /// another site (`//host`, `/\\host`, a scheme) nor anything with control characters.
    static func nextPath(_ text: String?) -> String? {
        guard let text, text.hasPrefix("/"), !text.hasPrefix("//"), !text.hasPrefix("/\\"), text.utf8.count <= 2048,
              !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else { return nil }
        return text
    }

    /// A referer's path when it is a Drive page (never another site).
    static func sameSitePath(_ referer: String) -> String? {
        guard let url = URL(string: referer), let path = url.path.isEmpty ? nil : url.path, path.hasPrefix("/"), !path.hasPrefix("//") else { return nil }
        return path + (url.query.map { "?" + $0 } ?? "")
    }

    static func folderURL(_ path: String, done: String) -> String {
        "/?path=\(WebEscaping.percentEncodeQueryValue(path))&done=\(done)"
    }

    static func row(_ item: DriveIndexRow, showFolder: Bool) -> [String: Any] {
        let folder = item.kind == DocumentItemRecord.Kind.folder.rawValue
        var row: [String: Any] = ["id": item.recordName, "name": item.name, "query": WebEscaping.percentEncodeQueryValue(item.path),
                                  "size": folder ? "—" : size(item.size), "date": date(item.modified), "iso": iso(item.modified)]
        if folder { row["folder"] = true }
        if showFolder, !item.parent.isEmpty { row["inside"] = item.parent }
        return row
    }

    static func size(_ bytes: Int64) -> String { bytes.formatted(.byteCount(style: .file)) }

    static func date(_ milliseconds: Int64) -> String {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000).formatted(date: .abbreviated, time: .shortened)
    }

    static func iso(_ milliseconds: Int64) -> String {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000).formatted(.iso8601)
    }

    static let securityHeaders: HTTPFields = [
        .cacheControl: "no-store",
        .init("Content-Security-Policy")!: "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
        .init("X-Frame-Options")!: "DENY", .init("X-Content-Type-Options")!: "nosniff", .init("Referrer-Policy")!: "same-origin",
    ]

    static func page(_ html: String, status: HTTPResponse.Status = .ok) -> Response {
        var headers = securityHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    static func redirect(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }

    static func asset(_ text: String, type: String) -> Response {
        Response(status: .ok, headers: [.contentType: type, .cacheControl: "public, max-age=300", .init("X-Content-Type-Options")!: "nosniff"],
                 body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
