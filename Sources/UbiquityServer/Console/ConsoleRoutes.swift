// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import UbiquityCore
import UbiquityWire

/// The developer Console at `/console`: a container's records (browse and query per
/// environment, database and zone; a record's fields, references and assets), its schema (types,
/// fields, indexes; the development → production differences and the deployment), its users and
/// subscriptions, the live request log and per-operation telemetry.
///
/// Signing in is the Drive's (`/signin`, the same session cookie); a container opens only for its
/// developers (`ubiq admin container developers`), and any other container is "not found", as
/// if it did not exist. The public database is shown whole (as CloudKit Console shows it); the
/// private database is the signed-in developer's own. Pages are server-rendered
/// (``ConsolePages``); the deployment is a form with the session's CSRF token.
struct ConsoleRoutes: Sendable {
    let sessions: DriveSessions
    let engine: RecordsEngine
    let admin: RecordsAdmin
    let requestLog: RequestLog
    let assets: AssetService?
    let bodyBudget: RequestBodyBudget

    /// Records per page.
    static let pageSize = 50
    /// The longest a live log page waits for a new entry.
    static let liveWait = Duration.seconds(20)

    /// The signed-in developer and the container a page is about.
    struct Developer: Sendable {
        let user: DriveUser
        let container: String
        /// Every container the developer may open (the page's switcher).
        let containers: [String]

        /// The developer's calls to a database of the container: the public database (every
        /// record) or their own private one.
        func context(_ environment: CloudKitEnvironment, _ scope: CloudKitDatabaseScope) -> RecordsEngine.Context {
            let caller = RecordsCaller(identity: .user(accountID: user.account.id, userRecordName: userRecordName), deviceID: "console")
            return RecordsEngine.Context(container: container, environment: environment, scope: scope, caller: caller, baseURL: user.context.baseURL)
        }

        /// The developer's user record name in the container.
        var userRecordName: String { RecordsCaller.userRecordName(accountID: user.account.id, container: container) }

        /// The key of a database of the container as the Console reads it.
        func key(_ environment: CloudKitEnvironment, _ scope: CloudKitDatabaseScope) -> DatabaseKey {
            DatabaseKey(container: container, environment: environment, scope: scope, owner: userRecordName)
        }
    }

    func register(on router: Router<RecordsRequestContext>) {
        let routes = self
        router.get("/console/static/console.js") { _, _ in DriveRoutes.asset(ConsoleStatic.script, type: "text/javascript; charset=utf-8") }
        router.get("/console") { request, _ in try await routes.containerList(request) }
        router.get("/console/:container") { request, context in
            try await routes.page(request, context) { developer in
                DriveRoutes.redirect("/console/\(WebEscaping.percentEncodeQueryValue(developer.container))/records")
            }
        }
        router.get("/console/:container/records") { request, context in
            try await routes.page(request, context) { developer in try await routes.records(request, developer: developer) }
        }
        router.get("/console/:container/record") { request, context in
            try await routes.page(request, context) { developer in try await routes.record(request, developer: developer) }
        }
        router.get("/console/:container/schema") { request, context in
            try await routes.page(request, context) { developer in
                try await routes.schema(Self.environment(request.uri.queryParameters["env"]), developer: developer)
            }
        }
        router.post("/console/:container/schema/deploy") { request, context in
            try await routes.page(request, context) { developer in try await routes.deploy(request, developer: developer) }
        }
        router.get("/console/:container/users") { request, context in
            try await routes.page(request, context) { developer in try await routes.users(request, developer: developer) }
        }
        router.get("/console/:container/subscriptions") { request, context in
            try await routes.page(request, context) { developer in try await routes.subscriptions(request, developer: developer) }
        }
        router.get("/console/:container/logs") { request, context in
            try await routes.page(request, context) { developer in routes.logs(request, developer: developer) }
        }
        router.get("/console/:container/logs/live") { request, context in try await routes.liveLog(request, context) }
        router.get("/console/:container/telemetry") { request, context in
            try await routes.page(request, context) { developer in routes.telemetry(developer: developer) }
        }
    }

    // MARK: Pages

    func containerList(_ request: Request) async throws -> Response {
        guard let user = try await sessions.user(of: request) else { return Self.signIn(request) }
        let accountID = user.account.id
        let containers = try await engine.store.read { tx in try await tx.consoleStore().developerContainers(accountID: accountID) }
        // the container switcher's form, sent without JavaScript
        if let chosen = request.uri.queryParameters["container"].map(String.init), containers.contains(chosen) {
            return DriveRoutes.redirect("/console/\(WebEscaping.percentEncodeQueryValue(chosen))/records")
        }
        let values: [String: Any] = ["containers": containers.map { ["name": $0, "query": WebEscaping.percentEncodeQueryValue($0)] },
                                     "anyContainers": !containers.isEmpty, "user": user.account.name]
        return DriveRoutes.page(ConsolePages.render("containers", title: "Containers", user: user, developer: nil, values))
    }

    func records(_ request: Request, developer: Developer) async throws -> Response {
        let query = request.uri.queryParameters
        let environment = Self.environment(query["env"])
        let scope: CloudKitDatabaseScope = query["db"] == "private" ? .private : .public
        let zoneName = query["zone"].map(String.init).flatMap { $0.isEmpty ? nil : $0 } ?? "_defaultZone"
        let type = query["type"].map(String.init).flatMap { $0.isEmpty ? nil : $0 }
        let field = query["field"].map(String.init)?.trimmingCharacters(in: .whitespaces) ?? ""
        let comparator = query["comparator"].flatMap { WireComparator(rawValue: String($0)) } ?? .equals
        let value = query["value"].map(String.init) ?? ""
        let key = developer.key(environment, scope)
        let container = developer.container
        let (zones, schema) = try await engine.store.read { tx -> ([StoredZone], ContainerSchema) in
            var zones: [StoredZone] = []
            if let database = try await tx.database(key) { zones = try await tx.zones(database: database.id) }
            return (zones, try await tx.schemas().schema(container: container, environment: environment))
        }
        var zoneNames = Set(zones.filter { !$0.deleted }.map(\.name))
        zoneNames.insert("_defaultZone")
        var values: [String: Any] = [
            "environments": Self.options(CloudKitEnvironment.allCases.map(\.rawValue), selected: environment.rawValue),
            "databases": Self.options(["public", "private"], selected: scope.rawValue),
            "zones": Self.options(zoneNames.sorted(), selected: zoneName),
            "types": Self.options([""] + schema.recordTypes.keys.sorted(), selected: type ?? ""),
            "comparators": Self.options(Self.comparators.map(\.rawValue), selected: comparator.rawValue),
            "field": field, "value": value, "private": scope == .private,
        ]
        var rows: [[String: Any]] = []
        var caption: String
        if !field.isEmpty {
            // a query, as the API runs it (production needs the field QUERYABLE)
            guard let type else { throw DriveRefusal(status: .badRequest, message: "Choose a record type to query by a field.") }
            do {
                let fieldType = schema.recordTypes[type]?.fields[field]?.type
                let filter = WireFilter(comparator: comparator, key: try ConsoleRecordView.filterKey(field), fieldValue: try ConsoleRecordView.filterValue(value, fieldType: fieldType, zone: zoneName))
                let marker = query["cursor"].map(String.init)
                let bytes = try await engine.queryRecordsBody(WireQueryRecordsRequest(
                    query: WireQuery(recordType: type, filterBy: [filter]), zoneID: WireZoneID(zoneName: zoneName), resultsLimit: Self.pageSize,
                    continuationMarker: marker), context: developer.context(environment, scope))
                let answer: JSONValue = try JSONValue.parse(Data(bytes))
                let found: [[String: JSONValue]] = (answer.objectValue?["records"]?.arrayValue ?? []).compactMap(\.objectValue)
                rows = found.map { record -> [String: Any] in
                    let modified = record["modified"]?.objectValue
                    return Self.recordRow(name: record["recordName"]?.stringValue ?? "", type: record["recordType"]?.stringValue ?? "",
                                          modified: Int64(modified?["timestamp"]?.doubleValue ?? 0), by: modified?["userRecordName"]?.stringValue ?? "",
                                          link: Self.recordLink(container: container, environment: environment, scope: scope, zone: zoneName,
                                                                name: record["recordName"]?.stringValue ?? ""))
                }
                if let next = answer.objectValue?["continuationMarker"]?.stringValue {
                    values["next"] = Self.url("/console/\(WebEscaping.percentEncodeQueryValue(container))/records", [
                        ("env", environment.rawValue), ("db", scope.rawValue), ("zone", zoneName), ("type", type), ("field", field),
                        ("comparator", comparator.rawValue), ("value", value), ("cursor", next)])
                }
                caption = "\(rows.count) record\(rows.count == 1 ? "" : "s") where \(field) \(comparator.rawValue) \(value)"
            } catch {
                values["error"] = DriveRoutes.describe(error).1
                caption = "The query was refused."
            }
        } else {
            // browsing: the zone's latest changes first
            let before = query["before"].flatMap { Int64(String($0)) }
            let found: [StoredRecord] = try await engine.store.read { tx in
                guard let database = try await tx.database(key), let zone = try await tx.zone(database: database.id, name: zoneName), !zone.deleted else { return [] }
                return try await tx.consoleStore().latestRecords(zone: zone.id, before: before, recordType: type, limit: Self.pageSize + 1)
            }
            rows = found.prefix(Self.pageSize).map { record in
                Self.recordRow(name: record.recordName, type: record.recordType, modified: record.modified.timestamp, by: record.modified.userRecordName,
                               link: Self.recordLink(container: container, environment: environment, scope: scope, zone: zoneName, name: record.recordName))
            }
            if found.count > Self.pageSize, let last = found.prefix(Self.pageSize).last {
                values["next"] = Self.url("/console/\(WebEscaping.percentEncodeQueryValue(container))/records", [
                    ("env", environment.rawValue), ("db", scope.rawValue), ("zone", zoneName), ("type", type ?? ""), ("before", String(last.sequence))])
            }
            caption = rows.isEmpty ? "No records in \(zoneName)." : "The latest changed records of \(zoneName)\(type.map { " of type \($0)" } ?? "")"
        }
        values["records"] = rows
        values["caption"] = caption
        return DriveRoutes.page(ConsolePages.render("records", title: "Records", user: developer.user, developer: developer, values))
    }

    func record(_ request: Request, developer: Developer) async throws -> Response {
        let query = request.uri.queryParameters
        let environment = Self.environment(query["env"])
        let scope: CloudKitDatabaseScope = query["db"] == "private" ? .private : .public
        let zoneName = query["zone"].map(String.init) ?? "_defaultZone"
        let name = query["name"].map(String.init) ?? ""
        let key = developer.key(environment, scope)
        let found = try await engine.store.read { tx -> (StoredRecord, [StoredRecord])? in
            guard let database = try await tx.database(key), let zone = try await tx.zone(database: database.id, name: zoneName),
                  let record = try await tx.record(zone: zone.id, name: name), !record.deleted else { return nil }
            let zones = try await tx.zones(database: database.id).filter { !$0.deleted }.map(\.id)
            return (record, try await tx.referencing(zones: zones, targetZone: zoneName, targetName: name))
        }
        guard let (record, referencing) = found else {
            throw DriveRefusal(status: .notFound, message: "There is no record \(name) in \(zoneName) of the \(environment.rawValue) \(scope.rawValue) database.")
        }
        let container = developer.container
        let baseURL = developer.user.context.baseURL
        let fields: [[String: Any]] = ConsoleRecordView.fields(of: record).map { field in
            var row: [String: Any] = ["name": field.name, "type": field.type, "text": field.text]
            row["references"] = field.references.map { reference in
                let zone = reference.zoneID?.zoneName ?? zoneName
                return ["name": reference.recordName, "zone": zone,
                        "link": Self.recordLink(container: container, environment: environment, scope: scope, zone: zone, name: reference.recordName)]
            }
            row["assets"] = field.assets.compactMap { asset -> [String: Any]? in
                guard let checksum = asset.fileChecksum, let size = asset.size else { return nil }
                var item: [String: Any] = ["checksum": checksum, "size": DriveRoutes.size(size)]
                if let assets, let baseURL {
                    item["link"] = assets.downloadURL(fileChecksum: checksum, size: size, container: container, baseURL: baseURL)
                        .replacingOccurrences(of: "${f}", with: WebEscaping.percentEncodeQueryValue("\(record.recordName)-\(field.name)"))
                }
                return item
            }
            return row
        }
        var values: [String: Any] = [
            "recordName": record.recordName, "recordType": record.recordType, "zone": zoneName, "environment": environment.rawValue,
            "database": scope.rawValue, "changeTag": record.changeTag,
            "created": Self.stamp(record.created), "modified": Self.stamp(record.modified), "fields": fields,
            "anyReferencedBy": !referencing.isEmpty,
            "referencedBy": referencing.map { source in
                ["name": source.recordName, "type": source.recordType,
                 "link": Self.recordLink(container: container, environment: environment, scope: scope, zone: zoneName, name: source.recordName)]
            },
            "back": Self.url("/console/\(WebEscaping.percentEncodeQueryValue(container))/records", [("env", environment.rawValue), ("db", scope.rawValue), ("zone", zoneName)]),
        ]
        if let parent = record.parent { values["parent"] = parent }
        if let shortGUID = record.shortGUID { values["shortGUID"] = shortGUID }
        return DriveRoutes.page(ConsolePages.render("record", title: record.recordName, user: developer.user, developer: developer, values))
    }

    func schema(_ environment: CloudKitEnvironment, developer: Developer, message: String? = nil) async throws -> Response {
        let development = try await admin.schema(container: developer.container, environment: .development)
        let production = try await admin.schema(container: developer.container, environment: .production)
        let shown = environment == .production ? production : development
        let types: [[String: Any]] = shown.recordTypes.values.sorted { $0.name < $1.name }.map { type in
            [
                "name": type.name,
                "fields": type.fields.values.sorted { $0.name < $1.name }.map { field -> [String: Any] in
                    ["name": field.name, "type": ContainerSchema.fileType(field.type), "queryable": field.queryable, "sortable": field.sortable,
                     "searchable": field.searchable]
                },
                "permissions": type.permissions.keys.sorted().map { role in
                    ["role": role, "grants": (type.permissions[role]?.names ?? []).joined(separator: ", ")]
                },
            ]
        }
        let indexes = try await admin.queryIndexes(container: developer.container, environment: environment)
        let differences = development.differences(from: production)
        var values: [String: Any] = [
            "environments": Self.options(CloudKitEnvironment.allCases.map(\.rawValue), selected: environment.rawValue),
            "environment": environment.rawValue, "types": types, "roles": shown.roles.sorted(),
            "indexes": indexes.map { ["definition": $0.index.definition.description, "state": $0.index.ready ? "ready" : "building (\($0.keys) keys)"] },
            "anyDifferences": !differences.isEmpty, "anyRoles": !shown.roles.isEmpty, "anyIndexes": !indexes.isEmpty,
            "differences": differences.map { ["text": $0.description, "refusal": $0.isRefusal] },
            "canDeploy": !differences.isEmpty && !differences.contains(where: \.isRefusal),
            "csrf": developer.user.csrf,
        ]
        if let message { values["message"] = message }
        return DriveRoutes.page(ConsolePages.render("schema", title: "Schema", user: developer.user, developer: developer, values))
    }

    func deploy(_ request: Request, developer: Developer) async throws -> Response {
        let form = try await bodyBudget.collect(request, upTo: 64 * 1024, tooLarge: { HTTPError(.contentTooLarge) }) { SignInRoutes.parseForm(String(buffer: $0)) }
        try sessions.checkCSRF(developer.user, given: form["csrf"])
        let deployment = try await admin.deploySchema(container: developer.container)
        let changes = deployment.addedTypes.map { "record type \($0)" } + deployment.addedFields.map { "field \($0)" }
            + deployment.addedIndexes.map { "query index \($0)" }
        let message = changes.isEmpty ? "Deployed: production's indexes and permissions are development's."
            : "Deployed to production: " + changes.joined(separator: ", ") + "."
        return try await schema(.production, developer: developer, message: message)
    }

    func users(_ request: Request, developer: Developer) async throws -> Response {
        let page = max(1, request.uri.queryParameters["page"].flatMap { Int(String($0)) } ?? 1)
        let container = developer.container
        let (identities, roles, developers) = try await engine.store.read { tx in
            (try await tx.consoleStore().userIdentities(container: container, offset: (page - 1) * Self.pageSize, limit: Self.pageSize + 1),
             try await tx.schemas().roleMembers(container: container),
             try await tx.consoleStore().developers(container: container))
        }
        let rows: [[String: Any]] = identities.prefix(Self.pageSize).map { identity in
            var row: [String: Any] = [
                "userRecordName": identity.userRecordName, "discoverable": identity.discoverable,
                "roles": roles.filter { $0.value.contains(identity.userRecordName) }.keys.sorted().joined(separator: ", "),
            ]
            // a user's name is shown only when they let others in the container find them
            if identity.discoverable {
                row["name"] = [identity.nameComponents.givenName, identity.nameComponents.familyName].compactMap { $0 }.joined(separator: " ")
            }
            return row
        }
        var values: [String: Any] = ["users": rows, "developers": developers.map(\.name)]
        if page > 1 { values["previous"] = "?page=\(page - 1)" }
        if identities.count > Self.pageSize { values["next"] = "?page=\(page + 1)" }
        return DriveRoutes.page(ConsolePages.render("users", title: "Users", user: developer.user, developer: developer, values))
    }

    func subscriptions(_ request: Request, developer: Developer) async throws -> Response {
        let query = request.uri.queryParameters
        let environment = Self.environment(query["env"])
        let scope: CloudKitDatabaseScope = query["db"] == "private" ? .private : .public
        let key = developer.key(environment, scope)
        let found = try await engine.store.read { tx in try await tx.subscriptionStore().subscriptions(database: key) }
        let rows: [[String: Any]] = found.sorted { ($0.createdAt, $0.subscriptionID) > ($1.createdAt, $1.subscriptionID) }.map { subscription in
            var what: String
            switch subscription.kind {
            case .query:
                let filters = subscription.query?.filterBy.map { "\($0.key) \($0.comparator.rawValue) \(ConsoleRecordView.text($0.fieldValue))" } ?? []
                what = (subscription.query?.recordType ?? "?") + (filters.isEmpty ? "" : " where " + filters.joined(separator: " and "))
                what += " · on " + subscription.firesOn.names.joined(separator: ", ") + (subscription.firesOnce ? " · once" : "")
                if !subscription.zoneWide, let zone = subscription.zoneName { what += " · in \(zone)" }
            case .zone: what = "zone \(subscription.zoneName ?? "?")"
            case .database: what = "the whole database"
            }
            return ["id": subscription.subscriptionID, "kind": subscription.kind.rawValue, "what": what, "subscriber": subscription.subscriber,
                    "date": DriveRoutes.date(subscription.createdAt), "iso": DriveRoutes.iso(subscription.createdAt)]
        }
        let values: [String: Any] = [
            "environments": Self.options(CloudKitEnvironment.allCases.map(\.rawValue), selected: environment.rawValue),
            "databases": Self.options(["public", "private"], selected: scope.rawValue), "subscriptions": rows, "private": scope == .private,
            "count": "\(rows.count) subscription\(rows.count == 1 ? "" : "s") on the \(environment.rawValue) \(scope.rawValue) database",
        ]
        return DriveRoutes.page(ConsolePages.render("subscriptions", title: "Subscriptions", user: developer.user, developer: developer, values))
    }

    func logs(_ request: Request, developer: Developer) -> Response {
        let entries = requestLog.entries(container: developer.container, limit: 200)
        let values: [String: Any] = [
            "entries": entries.map(Self.logRow), "newest": entries.first?.sequence ?? 0,
            "live": "/console/\(WebEscaping.percentEncodeQueryValue(developer.container))/logs/live",
        ]
        return DriveRoutes.page(ConsolePages.render("logs", title: "Request log", user: developer.user, developer: developer, values))
    }

    /// `GET /console/:container/logs/live?after=N`: the entries after N as JSON
    /// (`{"entries": [{sequence, time, operation, …}]}`, newest first), waiting for one when
    /// there is none yet.
    func liveLog(_ request: Request, _ context: RecordsRequestContext) async throws -> Response {
        do {
            guard let user = try await sessions.user(of: request), let developer = try await developer(user, context) else {
                throw DriveRefusal(status: .notFound, message: "There is no such container among yours.")
            }
            let after = request.uri.queryParameters["after"].flatMap { Int64(String($0)) } ?? 0
            let entries = await requestLog.waitForEntries(container: developer.container, after: after, timeout: Self.liveWait)
            let json = JSONValue.object(["entries": .array(entries.map { entry in
                JSONValue.object(Self.logRow(entry).mapValues { value in
                    switch value {
                    case let number as Int64: return .number(Double(number))
                    case let flag as Bool: return .bool(flag)
                    default: return .string("\(value)")
                    }
                })
            })])
            return Response(status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
                            body: .init(byteBuffer: ByteBuffer(bytes: json.serializedBytes())))
        } catch {
            let (status, message) = DriveRoutes.describe(error)
            return Response(status: status, headers: [.contentType: "application/json", .cacheControl: "no-store"],
                            body: .init(byteBuffer: ByteBuffer(bytes: JSONValue.object(["reason": .string(message)]).serializedBytes())))
        }
    }

    func telemetry(developer: Developer) -> Response {
        let summaries = requestLog.telemetry(container: developer.container, now: RecordsAuthenticator.now)
        let rows: [[String: Any]] = summaries.map { summary in
            ["operation": summary.operation, "requests": summary.requests, "rate": summary.requestsPerSecond.formatted(.number.precision(.fractionLength(2))),
             "p50": Self.milliseconds(summary.p50), "p99": Self.milliseconds(summary.p99), "errors": summary.errors,
             "errorShare": summary.requests == 0 ? "—" : (Double(summary.errors) / Double(summary.requests)).formatted(.percent.precision(.fractionLength(1))),
             "total": summary.totalRequests, "totalErrors": summary.totalErrors]
        }
        return DriveRoutes.page(ConsolePages.render("telemetry", title: "Telemetry", user: developer.user, developer: developer, ["operations": rows]))
    }

    // MARK: Plumbing

    /// `user` as the developer of the path's container, or nil when it is not theirs.
    func developer(_ user: DriveUser, _ context: RecordsRequestContext) async throws -> Developer? {
        let container = context.parameters.get("container") ?? ""
        let accountID = user.account.id
        let containers = try await engine.store.readWithoutSnapshot { tx in try await tx.consoleStore().developerContainers(accountID: accountID) }
        guard containers.contains(container) else { return nil }
        return Developer(user: user, container: container, containers: containers)
    }

    /// Runs a page for the container's developer: without a session, the sign-in page (back here
    /// after); for a container not theirs, "not found"; errors as a page saying why.
    func page(_ request: Request, _ context: RecordsRequestContext, _ body: (Developer) async throws -> Response) async throws -> Response {
        guard let user = try await sessions.user(of: request) else { return Self.signIn(request) }
        guard let developer = try await developer(user, context) else {
            return DriveRoutes.page(ConsolePages.render("message", title: "Not found", user: user, developer: nil, [
                "heading": "Not found", "message": "There is no container \(context.parameters.get("container") ?? "") among the ones you develop.",
                "back": "/console",
            ]), status: .notFound)
        }
        do {
            return try await body(developer)
        } catch {
            let (status, message) = DriveRoutes.describe(error)
            return DriveRoutes.page(ConsolePages.render("message", title: "Not done", user: user, developer: developer, [
                "heading": "That did not work", "message": message,
                "back": "/console/\(WebEscaping.percentEncodeQueryValue(developer.container))/records",
            ]), status: status)
        }
    }

    /// The sign-in page, coming back to `request`'s page once signed in.
    static func signIn(_ request: Request) -> Response {
        DriveRoutes.redirect("/signin?next=\(WebEscaping.percentEncodeQueryValue(request.uri.path + (request.uri.query.map { "?" + $0 } ?? "")))")
    }

    /// The comparators the records page offers.
    static let comparators: [WireComparator] = [.equals, .notEquals, .lessThan, .lessThanOrEquals, .greaterThan, .greaterThanOrEquals, .beginsWith,
                                                .listContains, .containsAllTokens]

    static func environment(_ text: Substring?) -> CloudKitEnvironment {
        text.flatMap { CloudKitEnvironment(rawValue: String($0)) } ?? .development
    }

    static func options(_ names: [String], selected: String) -> [[String: Any]] {
        names.map { name in
            var option: [String: Any] = ["value": name, "label": name.isEmpty ? "any type" : name]
            if name == selected { option["selected"] = true }
            return option
        }
    }

    static func url(_ path: String, _ parameters: [(String, String)]) -> String {
        path + "?" + parameters.map { "\($0.0)=\(WebEscaping.percentEncodeQueryValue($0.1))" }.joined(separator: "&")
    }

    static func recordLink(container: String, environment: CloudKitEnvironment, scope: CloudKitDatabaseScope, zone: String, name: String) -> String {
        url("/console/\(WebEscaping.percentEncodeQueryValue(container))/record",
            [("env", environment.rawValue), ("db", scope.rawValue), ("zone", zone), ("name", name)])
    }

    static func recordRow(name: String, type: String, modified: Int64, by: String, link: String) -> [String: Any] {
        ["name": name, "type": type, "date": DriveRoutes.date(modified), "iso": DriveRoutes.iso(modified), "by": by, "link": link]
    }

    static func stamp(_ stamp: WireRecordStamp) -> String {
        "\(DriveRoutes.date(stamp.timestamp)) by \(stamp.userRecordName)" + (stamp.deviceID.map { " on \($0)" } ?? "")
    }

    static func milliseconds(_ value: Double) -> String {
        value < 10 ? value.formatted(.number.precision(.fractionLength(2))) : value.formatted(.number.precision(.fractionLength(0)))
    }

    static func logRow(_ entry: LoggedRequest) -> [String: Any] {
        var row: [String: Any] = [
            "sequence": entry.sequence, "time": DriveRoutes.iso(entry.time),
            "clock": Date(timeIntervalSince1970: Double(entry.time) / 1000).formatted(date: .omitted, time: .standard), "operation": entry.operationName, "environment": entry.environment.rawValue,
            "database": entry.scope.rawValue, "status": Int64(entry.status), "latency": milliseconds(Double(entry.nanoseconds) / 1_000_000),
            "requestID": entry.requestID, "failed": entry.failed,
        ]
        if let code = entry.errorCode { row["errorCode"] = code.rawValue }
        return row
    }
}
