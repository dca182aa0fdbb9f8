// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The server's own sign-in page, which stands in for Apple's at the `redirectURL` of an
/// `AUTHENTICATION_REQUIRED` answer, and the page that hands the web-auth token back.
///
/// The contract with CloudKit JS is kept: after signing in, the token reaches the app either by a
/// redirect to the API token's sign-in callback URL with `?ckWebAuthToken=<token>` added, or, with
/// no callback URL, by `window.opener.postMessage({ckWebAuthToken: token}, targetOrigin)` from the
/// pop-up, which then closes.
///
/// The pages load nothing from elsewhere and use no framework: inline CSS, and on the success
/// page a few lines of plain JavaScript. Every interpolated value is escaped for its context
/// (HTML text and attributes, JavaScript string literals, URLs). Serve them with
/// `Content-Type: text/html; charset=utf-8`, `Cache-Control: no-store` and
/// ``contentSecurityPolicy``.
package enum SignInPage {
    /// The path the form posts to.
    package static let actionPath = "/auth/signin"

    /// The names of the form's fields (URL-encoded form body of the `POST` to ``actionPath``).
    package enum Field {
        /// The user name the user typed.
        package static let userName = "userName"
        /// The password the user typed.
        package static let password = "password"
        /// `"true"` when "Keep me signed in" is ticked; absent otherwise.
        package static let keepSignedIn = "keepSignedIn"
        /// Hidden: the container identifier the sign-in is for.
        package static let container = "container"
        /// Hidden: the API token the app used.
        package static let apiToken = "apiToken"
        /// Hidden, only when given: the callback URL to deliver the token to.
        package static let callbackURL = "callbackURL"
        /// Hidden, only when given: the web origin of the app that asked for the sign-in (the
        /// `origin` of the 421's `redirectURL`); the token is handed to it when the container
        /// allows it (``RecordsAdmin/allowedOrigins(container:add:remove:)``).
        package static let origin = "origin"
    }

    /// A web-auth token's lifetime without "Keep me signed in": 30 minutes (Apple's default).
    package static let defaultTokenLifetime: TimeInterval = 30 * 60
    /// A web-auth token's lifetime with "Keep me signed in": 2 weeks.
    package static let keepSignedInTokenLifetime: TimeInterval = 14 * 24 * 60 * 60

    /// The token lifetime for the "Keep me signed in" choice.
    package static func tokenLifetime(keepSignedIn: Bool) -> TimeInterval {
        keepSignedIn ? keepSignedInTokenLifetime : defaultTokenLifetime
    }

    /// A `Content-Security-Policy` for both pages: nothing may load, inline style and script
    /// only, and no page may frame them.
    package static let contentSecurityPolicy =
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'"

    /// The sign-in form: user name, password, "Keep me signed in", posting to ``actionPath`` with
    /// the container, the API token and the callback URL as hidden fields.
    ///
    /// - Parameters:
    ///   - container: the container identifier, shown and sent back.
    ///   - apiToken: the API token the app used, sent back.
    ///   - callbackURL: the callback URL to deliver the token to, if any, sent back.
    ///   - message: a message shown above the form (for example after a wrong password).
    ///   - userName: a user name to fill in again after a failed attempt.
    package static func form(container: String, apiToken: String, callbackURL: String?, message: String?,
                            userName: String? = nil, origin: String? = nil) -> String {
        var hidden = hiddenField(Field.container, container) + hiddenField(Field.apiToken, apiToken)
        if let callbackURL { hidden += hiddenField(Field.callbackURL, callbackURL) }
        if let origin { hidden += hiddenField(Field.origin, origin) }
        let alert = message.map { "<p class=\"message\" role=\"alert\">\(WebEscaping.html($0))</p>\n" } ?? ""
        let focus = userName?.isEmpty == false ? "" : " autofocus"
        let passwordFocus = userName?.isEmpty == false ? " autofocus" : ""
        return document(title: "Sign In", body: """
            <h1>Sign In</h1>
            <p class="subtitle">to use <strong>\(WebEscaping.html(container))</strong></p>
            \(alert)<form method="post" action="\(actionPath)" autocomplete="on">
            \(hidden)<label for="userName">User name</label>
            <input id="userName" name="\(Field.userName)" type="text" value="\(WebEscaping.html(userName ?? ""))" \
            autocomplete="username" autocapitalize="none" spellcheck="false" required\(focus)>
            <label for="password">Password</label>
            <input id="password" name="\(Field.password)" type="password" autocomplete="current-password" \
            maxlength="\(PasswordHasher.maximumPasswordByteCount)" required\(passwordFocus)>
            <label class="keep"><input type="checkbox" name="\(Field.keepSignedIn)" value="true"> Keep me signed in</label>
            <button type="submit">Sign In</button>
            </form>
            """)
    }

    /// The page shown after a successful sign-in, which delivers `webAuthToken` to the app.
    ///
    /// With a callback URL it redirects there with `ckWebAuthToken=<URL-encoded token>` added to
    /// the query (a meta refresh and a link; an HTTP 302 with ``callbackRedirect(callbackURL:token:)``
    /// is the better choice when the server can answer that way). Without one it posts
    /// `{ckWebAuthToken: token}` to `window.opener` with `targetOrigin` (`"*"` when nil; pass the
    /// API token's allowed origin whenever there is one, since `"*"` hands the token to whatever
    /// page opened the pop-up) and closes the window. A callback URL that
    /// ``isAcceptableCallbackURL(_:)`` refuses produces an error page without the token.
    package static func success(webAuthToken: String, callbackURL: String?, targetOrigin: String?) -> String {
        if let callbackURL {
            guard let location = callbackRedirect(callbackURL: callbackURL, token: webAuthToken) else {
                return document(title: "Sign-In Problem", body: """
                    <h1>Sign-In Problem</h1>
                    <p class="message" role="alert">You are signed in, but the app's sign-in callback URL is not \
                    a usable web address, so the app cannot be told. Ask the app's developer to correct it.</p>
                    """)
            }
            let escaped = WebEscaping.html(location)
            return document(title: "Signed In", head: "<meta http-equiv=\"refresh\" content=\"0; url='\(escaped)'\">\n", body: """
                <h1>Signed In</h1>
                <p>Returning to the app… <a href="\(escaped)">Continue</a></p>
                """)
        }
        let script = """
            (function () {
              var token = \(WebEscaping.javaScriptString(webAuthToken));
              var origin = \(WebEscaping.javaScriptString(targetOrigin ?? "*"));
              if (window.opener && !window.opener.closed) {
                window.opener.postMessage({ckWebAuthToken: token}, origin);
                window.close();
              }
              document.getElementById("status").textContent = "You are signed in. You can close this window.";
            })();
            """
        return document(title: "Signed In", body: """
            <h1>Signed In</h1>
            <p id="status">Returning to the app…</p>
            <script>
            \(script)
            </script>
            """)
    }

    /// The `Location` of an HTTP 302 that delivers `token` to `callbackURL`:
    /// the URL with `ckWebAuthToken=<token>` added to its query (before any fragment), the token
    /// percent-encoded so `+`, `/` and `=` arrive intact. Characters of the callback URL that are
    /// unsafe in a header or an attribute are percent-encoded.
    ///
    /// - Returns: nil when ``isAcceptableCallbackURL(_:)`` refuses the callback URL.
    package static func callbackRedirect(callbackURL: String, token: String) -> String? {
        guard isAcceptableCallbackURL(callbackURL) else { return nil }
        var base = Substring(callbackURL)
        var fragment: Substring = ""
        if let hash = base.firstIndex(of: "#") {
            fragment = base[hash...]
            base = base[..<hash]
        }
        let separator: String
        if let question = base.firstIndex(of: "?") {
            separator = base[question...].count == 1 || base.hasSuffix("&") ? "" : "&"
        } else {
            separator = "?"
        }
        let parameter = "\(CloudKitAuthHeaders.webAuthTokenQueryParameter)=\(WebEscaping.percentEncodeQueryValue(token))"
        return WebEscaping.sanitizeURL(String(base)) + separator + parameter + WebEscaping.sanitizeURL(String(fragment))
    }

    /// Whether `url` may receive tokens: an absolute URL with a scheme, without whitespace or
    /// control characters, and not a scheme that runs code or reads local data (`javascript:`,
    /// `data:`, `vbscript:`, `file:`, `blob:`, `about:`). Custom app schemes are allowed. Check
    /// callback URLs with this when an API token is registered, too.
    package static func isAcceptableCallbackURL(_ url: String) -> Bool {
        guard !url.isEmpty, url.utf8.count <= 2048,
              !url.unicodeScalars.contains(where: {
                  $0.properties.isWhitespace || $0.properties.generalCategory == .control
              }),
              let colon = url.firstIndex(of: ":")
        else { return false }
        let scheme = url[..<colon]
        guard let first = scheme.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic,
              scheme.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)
                  || $0 == "+" || $0 == "-" || $0 == ".") })
        else { return false }
        let blocked: Set<String> = ["javascript", "data", "vbscript", "file", "blob", "about", "filesystem"]
        guard !blocked.contains(scheme.lowercased()) else { return false }
        let rest = url[url.index(after: colon)...]
        if ["http", "https"].contains(scheme.lowercased()) {
            // A web URL needs a host: `https://host/...`.
            guard rest.hasPrefix("//"), rest.dropFirst(2).first.map({ $0 != "/" }) ?? false else { return false }
        }
        return !rest.isEmpty
    }

    private static func hiddenField(_ name: String, _ value: String) -> String {
        "<input type=\"hidden\" name=\"\(name)\" value=\"\(WebEscaping.html(value))\">\n"
    }

    private static func document(title: String, head: String = "", body: String) -> String {
        """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <meta name="robots" content="noindex">
        \(head)<title>\(WebEscaping.html(title))</title>
        <style>
        :root { color-scheme: light dark; }
        body { font: 16px/1.4 -apple-system, system-ui, sans-serif; margin: 0; min-height: 100vh;
               display: flex; align-items: center; justify-content: center; background: Canvas; color: CanvasText; }
        main { width: min(22rem, 90vw); padding: 2rem; border: 1px solid GrayText; border-radius: 12px; }
        h1 { font-size: 1.5rem; margin: 0 0 .25rem; }
        .subtitle { margin: 0 0 1.25rem; color: GrayText; overflow-wrap: anywhere; }
        .message { padding: .5rem .75rem; border-radius: 6px; background: #fdecea; color: #8a1c12; }
        label { display: block; margin: .75rem 0 .25rem; }
        input[type=text], input[type=password] { width: 100%; box-sizing: border-box; padding: .5rem;
               font: inherit; border: 1px solid GrayText; border-radius: 6px; }
        label.keep { display: flex; gap: .5rem; align-items: center; }
        button { margin-top: 1.25rem; width: 100%; padding: .6rem; font: inherit; border: 0; border-radius: 6px;
                 background: #0071e3; color: #fff; cursor: pointer; }
        </style>
        </head>
        <body>
        <main>
        \(body)
        </main>
        </body>
        </html>

        """
    }
}
