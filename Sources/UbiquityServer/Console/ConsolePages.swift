// SPDX-License-Identifier: Apache-2.0
import Foundation
import Mustache

/// The Console's pages: Mustache templates (`{{…}}` escapes HTML, so record values, names and
/// errors holding markup show as text) in one layout with the container's sections. Every page
/// works without JavaScript; `console.js` only keeps the request log live.
enum ConsolePages {
    /// The templates, parsed once (with the Drive's message page).
    static let library = DrivePages.makeLibrary(templates.merging(["message": DrivePages.templates["message"] ?? ""]) { mine, _ in mine }, of: "Console")

    /// The sections of a container, in the layout's navigation.
    static let sections = [("records", "Records"), ("schema", "Schema"), ("users", "Users"), ("subscriptions", "Subscriptions"),
                           ("logs", "Request log"), ("telemetry", "Telemetry")]

    /// Renders `page` with `values` inside the layout: the signed-in user, and the container's
    /// sections and switcher when a developer's page.
    static func render(_ page: String, title: String, user: DriveUser?, developer: ConsoleRoutes.Developer?, _ values: [String: Any]) -> String {
        var values = values
        if let developer { values["container"] = developer.container }
        let body = library.render(values, withTemplate: page) ?? ""
        var layout: [String: Any] = ["title": "\(title)\(developer.map { " · \($0.container)" } ?? "") · Ubiquity Console", "body": body]
        if let user {
            layout["user"] = user.account.name
            layout["csrf"] = user.csrf
        }
        if let developer {
            let query = WebEscaping.percentEncodeQueryValue(developer.container)
            layout["container"] = developer.container
            layout["sections"] = sections.map { id, label in
                var section: [String: Any] = ["href": "/console/\(query)/\(id)", "label": label]
                if id == page || (id == "records" && page == "record") { section["current"] = true }
                return section
            }
            layout["switcher"] = developer.containers.map { name in
                var option: [String: Any] = ["value": name]
                if name == developer.container { option["selected"] = true }
                return option
            }
        }
        return library.render(layout, withTemplate: "layout") ?? ""
    }

    static let templates: [String: String] = [
        "layout": """
            {{> head}}
            <body class="console">
            <header class="top">
              <a class="brand" href="/console">Ubiquity Console</a>
              {{#user}}
              <nav aria-label="Account">
                <a href="/">Drive</a>
                {{> signout}}
              </nav>
              {{/user}}
            </header>
            {{#container}}
            <div class="sections">
              <form method="get" action="/console" class="inline switcher" data-switch>
                <label for="switch-container">Container</label>
                <select id="switch-container" name="container">{{#switcher}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{value}}</option>{{/switcher}}</select>
                <noscript><button type="submit">Open</button></noscript>
              </form>
              <nav aria-label="Container">
                {{#sections}}<a href="{{href}}"{{#current}} aria-current="page" class="current"{{/current}}>{{label}}</a>{{/sections}}
              </nav>
            </div>
            {{/container}}
            <main id="main">
            {{{body}}}
            </main>
            <script src="/console/static/console.js" defer></script>
            </body>
            </html>
            """,
        "containers": """
            <h1>Your containers</h1>
            {{#anyContainers}}
            <ul class="list">
              {{#containers}}<li><a href="/console/{{query}}/records">{{name}}</a></li>{{/containers}}
            </ul>
            {{/anyContainers}}
            {{^containers}}
            <p>{{user}} develops no container on this server yet. The server's administrator adds developers with
            <code>ubiq admin container developers CONTAINER --add {{user}}</code>.</p>
            {{/containers}}
            """,
        "records": """
            <h1>Records</h1>
            <form method="get" class="filters" aria-label="Which records">
              <label>Environment <select name="env">{{#environments}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/environments}}</select></label>
              <label>Database <select name="db">{{#databases}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/databases}}</select></label>
              <label>Zone <select name="zone">{{#zones}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/zones}}</select></label>
              <label>Record type <select name="type">{{#types}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/types}}</select></label>
              <label>Field <input name="field" value="{{field}}" placeholder="any" size="12"></label>
              <label>Comparator <select name="comparator">{{#comparators}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/comparators}}</select></label>
              <label>Value <input name="value" value="{{value}}" size="14"></label>
              <button type="submit">Show</button>
            </form>
            {{#private}}<p class="muted">The private database shown is your own, as CloudKit Console shows it.</p>{{/private}}
            {{#error}}<p class="error" role="alert">{{error}}</p>{{/error}}
            <table class="items">
              <caption>{{caption}}</caption>
              <thead><tr><th scope="col">Record name</th><th scope="col">Type</th><th scope="col">Modified</th><th scope="col">By</th></tr></thead>
              <tbody>
              {{#records}}
              <tr><td><a href="{{link}}">{{name}}</a></td><td>{{type}}</td><td><time datetime="{{iso}}">{{date}}</time></td><td class="muted">{{by}}</td></tr>
              {{/records}}
              </tbody>
            </table>
            {{#next}}<p class="pages"><a href="{{next}}" rel="next">Older records</a></p>{{/next}}
            """,
        "record": """
            <p><a href="{{back}}">← Records of {{zone}}</a></p>
            <h1>{{recordName}}</h1>
            <dl class="facts">
              <dt>Record type</dt><dd>{{recordType}}</dd>
              <dt>Where</dt><dd>{{environment}} · {{database}} database · {{zone}}</dd>
              <dt>Change tag</dt><dd><code>{{changeTag}}</code></dd>
              <dt>Created</dt><dd>{{created}}</dd>
              <dt>Modified</dt><dd>{{modified}}</dd>
              {{#parent}}<dt>Parent</dt><dd>{{parent}}</dd>{{/parent}}
              {{#shortGUID}}<dt>Short GUID</dt><dd>{{shortGUID}}</dd>{{/shortGUID}}
            </dl>
            <table class="items">
              <caption>Fields</caption>
              <thead><tr><th scope="col">Field</th><th scope="col">Type</th><th scope="col">Value</th></tr></thead>
              <tbody>
              {{#fields}}
              <tr><th scope="row">{{name}}</th><td>{{type}}</td><td class="value">
                {{#references}}<a href="{{link}}">{{name}}</a> <span class="muted">in {{zone}}</span><br>{{/references}}
                {{#assets}}{{#link}}<a href="{{link}}">{{size}}</a>{{/link}}{{^link}}{{size}}{{/link}} <span class="muted">checksum {{checksum}}</span><br>{{/assets}}
                {{^references}}{{^assets}}<pre>{{text}}</pre>{{/assets}}{{/references}}
              </td></tr>
              {{/fields}}
              </tbody>
            </table>
            {{#anyReferencedBy}}
            <h2>Referenced by</h2>
            <ul class="list">{{#referencedBy}}<li><a href="{{link}}">{{name}}</a> <span class="muted">{{type}}</span></li>{{/referencedBy}}</ul>
            {{/anyReferencedBy}}
            """,
        "schema": """
            <h1>Schema</h1>
            {{#message}}<p class="notice" role="status">{{message}}</p>{{/message}}
            <form method="get" class="filters" aria-label="Environment">
              <label>Environment <select name="env">{{#environments}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/environments}}</select></label>
              <button type="submit">Show</button>
            </form>
            <section aria-labelledby="deploy-title" class="card">
              <h2 id="deploy-title">Development → production</h2>
              {{#anyDifferences}}
              <ul class="list">{{#differences}}<li{{#refusal}} class="error"{{/refusal}}>{{text}}</li>{{/differences}}</ul>
              {{/anyDifferences}}
              {{^differences}}<p>Production's schema is development's: nothing to deploy.</p>{{/differences}}
              {{#canDeploy}}
              <form method="post" action="/console/{{container}}/schema/deploy">
                <input type="hidden" name="csrf" value="{{csrf}}">
                <button type="submit">Deploy to production</button>
              </form>
              {{/canDeploy}}
            </section>
            {{#types}}
            <table class="items">
              <caption>{{name}} <span class="muted">({{environment}})</span></caption>
              <thead><tr><th scope="col">Field</th><th scope="col">Type</th><th scope="col">Queryable</th><th scope="col">Sortable</th><th scope="col">Searchable</th></tr></thead>
              <tbody>
              {{#fields}}<tr><th scope="row">{{name}}</th><td>{{type}}</td><td>{{#queryable}}yes{{/queryable}}</td><td>{{#sortable}}yes{{/sortable}}</td><td>{{#searchable}}yes{{/searchable}}</td></tr>{{/fields}}
              </tbody>
            </table>
            <p class="muted">Permissions: {{#permissions}}{{role}} {{grants}}; {{/permissions}}</p>
            {{/types}}
            {{^types}}<p>The {{environment}} schema has no record types yet.</p>{{/types}}
            {{#anyRoles}}<p>Security roles: {{#roles}}{{.}} {{/roles}}</p>{{/anyRoles}}
            {{#anyIndexes}}
            <h2>Query indexes</h2>
            <ul class="list">{{#indexes}}<li><code>{{definition}}</code> <span class="muted">{{state}}</span></li>{{/indexes}}</ul>
            {{/anyIndexes}}
            """,
        "users": """
            <h1>Users</h1>
            <p>Developers: {{#developers}}{{.}} {{/developers}}</p>
            <table class="items">
              <caption>Users who have used this container, newest first</caption>
              <thead><tr><th scope="col">User record name</th><th scope="col">Name</th><th scope="col">Discoverable</th><th scope="col">Roles</th></tr></thead>
              <tbody>
              {{#users}}<tr><td><code>{{userRecordName}}</code></td><td>{{name}}{{^discoverable}}<span class="muted">hidden</span>{{/discoverable}}</td><td>{{#discoverable}}yes{{/discoverable}}{{^discoverable}}no{{/discoverable}}</td><td>{{roles}}</td></tr>{{/users}}
              </tbody>
            </table>
            <p class="pages">{{#previous}}<a href="{{previous}}" rel="prev">Newer</a>{{/previous}} {{#next}}<a href="{{next}}" rel="next">Older</a>{{/next}}</p>
            """,
        "subscriptions": """
            <h1>Subscriptions</h1>
            <form method="get" class="filters" aria-label="Which database">
              <label>Environment <select name="env">{{#environments}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/environments}}</select></label>
              <label>Database <select name="db">{{#databases}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/databases}}</select></label>
              <button type="submit">Show</button>
            </form>
            {{#private}}<p class="muted">The private database shown is your own.</p>{{/private}}
            <table class="items">
              <caption>{{count}}</caption>
              <thead><tr><th scope="col">ID</th><th scope="col">Kind</th><th scope="col">On</th><th scope="col">Subscriber</th><th scope="col">Created</th></tr></thead>
              <tbody>
              {{#subscriptions}}<tr><td>{{id}}</td><td>{{kind}}</td><td>{{what}}</td><td><code>{{subscriber}}</code></td><td><time datetime="{{iso}}">{{date}}</time></td></tr>{{/subscriptions}}
              </tbody>
            </table>
            """,
        "logs": """
            <h1>Request log</h1>
            <p class="muted">The last requests of this container to <code>/database/1/…</code>, newest first{{#live}}<span data-live="{{live}}" data-after="{{newest}}" id="live-log"></span>{{/live}}. The page follows new requests while it is open.</p>
            <table class="items log">
              <thead><tr><th scope="col">Time</th><th scope="col">Operation</th><th scope="col">Environment</th><th scope="col">Database</th><th scope="col">Status</th><th scope="col">Latency (ms)</th><th scope="col">Error</th><th scope="col">Request ID</th></tr></thead>
              <tbody id="log-rows">
              {{#entries}}<tr{{#failed}} class="failed"{{/failed}}><td><time datetime="{{time}}">{{clock}}</time></td><td>{{operation}}</td><td>{{environment}}</td><td>{{database}}</td><td>{{status}}</td><td>{{latency}}</td><td>{{errorCode}}</td><td><code>{{requestID}}</code></td></tr>{{/entries}}
              </tbody>
            </table>
            {{^entries}}<p id="log-empty">No requests since the server started.</p>{{/entries}}
            """,
        "telemetry": """
            <h1>Telemetry</h1>
            <table class="items">
              <caption>Per operation over the last five minutes (totals since the server started)</caption>
              <thead><tr><th scope="col">Operation</th><th scope="col">Requests</th><th scope="col">Requests/s</th><th scope="col">p50 (ms)</th><th scope="col">p99 (ms)</th><th scope="col">Errors</th><th scope="col">Error rate</th><th scope="col">Total</th><th scope="col">Total errors</th></tr></thead>
              <tbody>
              {{#operations}}<tr><th scope="row">{{operation}}</th><td>{{requests}}</td><td>{{rate}}</td><td>{{p50}}</td><td>{{p99}}</td><td>{{errors}}</td><td>{{errorShare}}</td><td>{{total}}</td><td>{{totalErrors}}</td></tr>{{/operations}}
              </tbody>
            </table>
            {{^operations}}<p>No requests since the server started.</p>{{/operations}}
            """,
    ]
}
