// SPDX-License-Identifier: Apache-2.0
import Foundation
import Mustache

/// The Drive's pages: Mustache templates (swift-mustache; `{{…}}` escapes HTML, so stored names
/// holding markup or script show as text), rendered into one layout. Pages work without
/// JavaScript for browsing and every form; `drive.js` adds uploads with progress and
/// drag-and-drop.
enum DrivePages {
    /// The templates, parsed once.
    static let library = makeLibrary(templates, of: "Drive")

    /// A library of `templates` (the Drive's, the Console's); a template that does not parse is
    /// a programming error, found by the first page of the first test.
    static func makeLibrary(_ templates: [String: String], of what: String) -> MustacheLibrary {
        var library = MustacheLibrary()
        for (name, text) in templates.merging(["head": head, "signout": signOut], uniquingKeysWith: { mine, _ in mine }) {
            do { try library.register(text, named: name) } catch { preconditionFailure("the \(what) template \(name) does not parse: \(error)") }
        }
        return library
    }

    /// Renders `page` with `values`, inside the layout (`title`, and `user`/`csrf` when signed in).
    static func render(_ page: String, title: String, user: DriveUser?, _ values: [String: Any]) -> String {
        let body = library.render(values, withTemplate: page) ?? ""
        var layout: [String: Any] = ["title": "\(title) · Ubiquity Drive", "body": body]
        if let user {
            layout["user"] = user.account.name
            layout["csrf"] = user.csrf
        }
        return library.render(layout, withTemplate: "layout") ?? ""
    }

    /// The start of every page, the Drive's and the Console's (`{{> head}}`): `title` in full,
    /// the style sheet, and the session's CSRF token for scripts.
    static let head = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        {{#csrf}}<meta name="csrf-token" content="{{csrf}}">{{/csrf}}
        <title>{{title}}</title>
        <link rel="stylesheet" href="/drive/static/drive.css">
        </head>
        """

    /// The signed-in user's sign-out button, on every page (`{{> signout}}`).
    static let signOut = """
        <form method="post" action="/signout" class="inline">
          <input type="hidden" name="csrf" value="{{csrf}}">
          <button type="submit" class="link">Sign out {{user}}</button>
        </form>
        """

    static let templates: [String: String] = [
        "layout": """
            {{> head}}
            <body>
            <header class="top">
              <a class="brand" href="/">Ubiquity Drive</a>
              {{#user}}
              <nav aria-label="Main">
                <a href="/">Files</a>
                <a href="/trash">Recently Deleted</a>
                <a href="/shares">Shared links</a>
                {{> signout}}
              </nav>
              {{/user}}
            </header>
            <main id="main">
            {{{body}}}
            </main>
            <script src="/drive/static/drive.js" defer></script>
            </body>
            </html>
            """,
        "signin": """
            <section class="card narrow" aria-labelledby="signin-title">
              <h1 id="signin-title">Sign in</h1>
              {{#message}}<p class="error" role="alert">{{message}}</p>{{/message}}
              <form method="post" action="/signin">
                {{#next}}<input type="hidden" name="next" value="{{next}}">{{/next}}
                <label for="user">User name</label>
                <input id="user" name="user" autocomplete="username" required value="{{userName}}">
                <label for="password">Password</label>
                <input id="password" name="password" type="password" autocomplete="current-password" required>
                <button type="submit">Sign in</button>
              </form>
            </section>
            """,
        "files": """
            <nav aria-label="Folder" class="crumbs">
              <a href="/">Drive</a>{{#crumbs}} / <a href="/?path={{query}}">{{name}}</a>{{/crumbs}}
            </nav>
            {{#message}}<p class="notice" role="status">{{message}}</p>{{/message}}
            <div class="toolbar">
              <form method="get" action="/" role="search" class="inline">
                <label for="q" class="hidden">Search by name</label>
                <input id="q" name="q" type="search" placeholder="Search by name" value="{{search}}">
                <button type="submit">Search</button>
              </form>
              {{^search}}
              <form method="post" action="/drive/folder" class="inline">
                <input type="hidden" name="csrf" value="{{csrf}}">
                <input type="hidden" name="parent" value="{{path}}">
                <label for="folder-name" class="hidden">New folder name</label>
                <input id="folder-name" name="name" placeholder="New folder" required>
                <button type="submit">New folder</button>
              </form>
              <label class="button" for="upload">Upload files</label>
              <input id="upload" type="file" multiple class="hidden-input" data-folder="{{path}}">
              {{/search}}
            </div>
            {{^search}}<div id="drop" class="drop" data-folder="{{path}}" aria-label="Drop files here to upload them">Drop files here to upload them into {{folderName}}.</div>{{/search}}
            <ul id="progress" class="progress" aria-live="polite"></ul>
            <table class="items">
              <caption>{{caption}}</caption>
              <thead><tr><th scope="col">Name</th><th scope="col">Size</th><th scope="col">Modified</th><th scope="col">Actions</th></tr></thead>
              <tbody>
              {{#items}}
              <tr data-name="{{name}}">
                <td class="name">{{#folder}}<span class="icon folder-icon" aria-hidden="true"></span> <a class="folder" href="/?path={{query}}">{{name}}</a>{{/folder}}{{^folder}}<span class="icon file-icon" aria-hidden="true"></span> <a href="/drive/file/{{id}}">{{name}}</a>{{/folder}}{{#inside}} <span class="muted">in {{inside}}</span>{{/inside}}</td>
                <td>{{size}}</td>
                <td><time datetime="{{iso}}">{{date}}</time></td>
                <td class="actions">
                  <form method="post" action="/drive/rename" class="inline">
                    <input type="hidden" name="csrf" value="{{csrf}}">
                    <input type="hidden" name="id" value="{{id}}">
                    <label for="rename-{{id}}" class="hidden">New name for {{name}}</label>
                    <input id="rename-{{id}}" name="name" value="{{name}}" required size="14">
                    <button type="submit">Rename</button>
                  </form>
                  <form method="post" action="/drive/move" class="inline">
                    <input type="hidden" name="csrf" value="{{csrf}}">
                    <input type="hidden" name="id" value="{{id}}">
                    <label for="move-{{id}}" class="hidden">Folder to move {{name}} into</label>
                    <input id="move-{{id}}" name="folder" placeholder="folder/path" size="10">
                    <button type="submit">Move</button>
                  </form>
                  {{^folder}}<a href="/versions?id={{id}}">Versions</a>{{/folder}}
                  <a href="/share?id={{id}}" aria-label="Share {{name}}">Share</a>
                  <form method="post" action="/drive/delete" class="inline">
                    <input type="hidden" name="csrf" value="{{csrf}}">
                    <input type="hidden" name="id" value="{{id}}">
                    <button type="submit" class="danger" aria-label="Delete {{name}}">Delete</button>
                  </form>
                </td>
              </tr>
              {{/items}}
              {{^items}}<tr><td colspan="4" class="muted">{{#search}}Nothing is named like that.{{/search}}{{^search}}This folder is empty.{{/search}}</td></tr>{{/items}}
              </tbody>
            </table>
            <nav aria-label="Pages" class="pages">
              {{#previous}}<a rel="prev" href="{{previous}}">Previous page</a>{{/previous}}
              {{#next}}<a rel="next" href="{{next}}">Next page</a>{{/next}}
            </nav>
            """,
        "versions": """
            <nav aria-label="Folder" class="crumbs"><a href="/?path={{folderQuery}}">Back to the folder</a></nav>
            <h1>Versions of {{name}}</h1>
            {{#message}}<p class="notice" role="status">{{message}}</p>{{/message}}
            <table class="items">
              <caption>Every upload the server keeps, newest first (thinned as they age).</caption>
              <thead><tr><th scope="col">Saved</th><th scope="col">By</th><th scope="col">Size</th><th scope="col">Actions</th></tr></thead>
              <tbody>
              {{#versions}}
              <tr>
                <td><time datetime="{{iso}}">{{date}}</time>{{#current}} <strong>(current)</strong>{{/current}}</td>
                <td>{{by}}</td>
                <td>{{size}}</td>
                <td class="actions">
                  <a href="/versions/file?id={{id}}">Download</a>
                  {{^current}}
                  <form method="post" action="/versions/restore" class="inline">
                    <input type="hidden" name="csrf" value="{{csrf}}">
                    <input type="hidden" name="version" value="{{id}}">
                    <input type="hidden" name="id" value="{{record}}">
                    <button type="submit" aria-label="Restore the version of {{date}}">Restore</button>
                  </form>
                  {{/current}}
                </td>
              </tr>
              {{/versions}}
              </tbody>
            </table>
            """,
        "trash": """
            <h1>Recently Deleted</h1>
            <p class="muted">Items deleted on any device stay here for {{days}} days; restoring puts them back on every device.</p>
            {{#message}}<p class="notice" role="status">{{message}}</p>{{/message}}
            <table class="items">
              <thead><tr><th scope="col">Name</th><th scope="col">Deleted</th><th scope="col">By</th><th scope="col">Actions</th></tr></thead>
              <tbody>
              {{#items}}
              <tr data-name="{{name}}">
                <td>{{path}}{{#contains}} <span class="muted">(and {{contains}} inside)</span>{{/contains}}</td>
                <td><time datetime="{{iso}}">{{date}}</time></td>
                <td>{{by}}</td>
                <td class="actions">
                  <form method="post" action="/trash/restore" class="inline">
                    <input type="hidden" name="csrf" value="{{csrf}}">
                    <input type="hidden" name="id" value="{{id}}">
                    <button type="submit" aria-label="Restore {{path}}">Restore</button>
                  </form>
                  <form method="post" action="/trash/delete" class="inline">
                    <input type="hidden" name="csrf" value="{{csrf}}">
                    <input type="hidden" name="id" value="{{id}}">
                    <button type="submit" class="danger" aria-label="Delete {{path}} now">Delete now</button>
                  </form>
                </td>
              </tr>
              {{/items}}
              {{^items}}<tr><td colspan="4" class="muted">Nothing was deleted lately.</td></tr>{{/items}}
              </tbody>
            </table>
            """,
        "share": """
            <section class="card narrow" aria-labelledby="share-title">
              <h1 id="share-title">Share {{name}}</h1>
              <p class="muted">Anyone with the link can see{{#folder}} what the folder holds and download it{{/folder}}{{^folder}} and download it{{/folder}}, without an account, until it expires or you revoke it.</p>
              <form method="post" action="/shares/new">
                <input type="hidden" name="csrf" value="{{csrf}}">
                <input type="hidden" name="id" value="{{id}}">
                <label for="days">Expires after (days)</label>
                <input id="days" name="days" type="number" min="1" max="365" value="7" required>
                <label for="share-password">Password (optional)</label>
                <input id="share-password" name="password" type="password" autocomplete="new-password">
                <button type="submit">Make the link</button>
              </form>
            </section>
            """,
        "shared": """
            <section class="card" aria-labelledby="shared-title">
              <h1 id="shared-title">A link to {{name}}</h1>
              <p>Copy it now: it is not shown again. It expires on <time datetime="{{iso}}">{{date}}</time>.</p>
              <label for="link">Link</label>
              <input id="link" class="wide" readonly value="{{url}}">
              <p><a href="/shares">All your links</a></p>
            </section>
            """,
        "shares": """
            <h1>Shared links</h1>
            {{#message}}<p class="notice" role="status">{{message}}</p>{{/message}}
            <table class="items">
              <thead><tr><th scope="col">Item</th><th scope="col">Made</th><th scope="col">Expires</th><th scope="col">Password</th><th scope="col">Actions</th></tr></thead>
              <tbody>
              {{#links}}
              <tr>
                <td>{{path}}</td><td>{{made}}</td><td>{{expires}}{{#expired}} (expired){{/expired}}</td><td>{{#password}}yes{{/password}}{{^password}}no{{/password}}</td>
                <td><form method="post" action="/shares/revoke" class="inline">
                  <input type="hidden" name="csrf" value="{{csrf}}">
                  <input type="hidden" name="digest" value="{{digest}}">
                  <button type="submit" class="danger" aria-label="Revoke the link to {{path}}">Revoke</button>
                </form></td>
              </tr>
              {{/links}}
              {{^links}}<tr><td colspan="5" class="muted">You have shared nothing.</td></tr>{{/links}}
              </tbody>
            </table>
            """,
        "public": """
            <h1>{{name}}</h1>
            <p class="muted">Shared with you, read-only.</p>
            {{#file}}<p>{{size}} · <a class="button" href="{{base}}/file">Download</a></p>{{/file}}
            {{#folder}}
            <nav aria-label="Folder" class="crumbs"><a href="{{base}}">{{name}}</a>{{#crumbs}} / <a href="{{base}}?path={{query}}">{{name}}</a>{{/crumbs}}</nav>
            <table class="items">
              <thead><tr><th scope="col">Name</th><th scope="col">Size</th><th scope="col">Modified</th></tr></thead>
              <tbody>
              {{#items}}
              <tr><td>{{#isFolder}}<span class="icon folder-icon" aria-hidden="true"></span> <a href="{{base}}?path={{relative}}">{{name}}</a>{{/isFolder}}{{^isFolder}}<span class="icon file-icon" aria-hidden="true"></span> <a href="{{base}}/file?id={{id}}">{{name}}</a>{{/isFolder}}</td><td>{{size}}</td><td>{{date}}</td></tr>
              {{/items}}
              {{^items}}<tr><td colspan="3" class="muted">This folder is empty.</td></tr>{{/items}}
              </tbody>
            </table>
            {{/folder}}
            """,
        "sharepassword": """
            <section class="card narrow" aria-labelledby="unlock-title">
              <h1 id="unlock-title">This link has a password</h1>
              {{#message}}<p class="error" role="alert">{{message}}</p>{{/message}}
              <form method="post" action="{{base}}">
                <label for="link-password">Password</label>
                <input id="link-password" name="password" type="password" required autocomplete="off">
                <button type="submit">Open</button>
              </form>
            </section>
            """,
        "message": """
            <section class="card narrow">
              <h1>{{heading}}</h1>
              <p role="alert">{{message}}</p>
              <p><a href="{{back}}">Back</a></p>
            </section>
            """,
    ]
}
