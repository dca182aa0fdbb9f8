// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
@testable import UbiquityServer

@Suite struct AuthSignInPageTests {
    let hostile = "</script><script>alert(1)</script>\"'&<b>"

    func occurrences(of needle: String, in haystack: String) -> Int {
        haystack.components(separatedBy: needle).count - 1
    }

    /// Decodes a JavaScript string literal made of JSON-compatible escapes.
    func decodeLiteral(_ literal: String) throws -> String {
        try JSONDecoder().decode(String.self, from: Data(literal.utf8))
    }

    @Test func formHasTheFieldsAndPostsToSignIn() {
        let page = SignInPage.form(container: "iCloud.com.example.App", apiToken: "tok", callbackURL: "https://app.example/cb",
                                   message: nil)
        #expect(page.hasPrefix("<!DOCTYPE html>"))
        #expect(page.contains(#"<form method="post" action="/auth/signin""#))
        #expect(page.contains(#"name="userName""#))
        #expect(page.contains(#"type="password""#))
        #expect(page.contains(#"type="checkbox" name="keepSignedIn" value="true""#))
        #expect(page.contains("Keep me signed in"))
        #expect(page.contains(#"<input type="hidden" name="container" value="iCloud.com.example.App">"#))
        #expect(page.contains(#"<input type="hidden" name="apiToken" value="tok">"#))
        #expect(page.contains(#"<input type="hidden" name="callbackURL" value="https://app.example/cb">"#))
        #expect(!page.contains("role=\"alert\""))
        #expect(!page.contains("<script"))
        #expect(!page.contains("http://") && !page.contains("src="))
    }

    @Test func formWithoutCallbackHasNoCallbackField() {
        let page = SignInPage.form(container: "c", apiToken: "t", callbackURL: nil, message: "Wrong password.")
        #expect(!page.contains(#"name="callbackURL""#))
        #expect(page.contains(#"<p class="message" role="alert">Wrong password.</p>"#))
    }

    @Test func formEscapesEveryValue() {
        let page = SignInPage.form(container: hostile, apiToken: hostile, callbackURL: hostile, message: hostile,
                                   userName: hostile)
        #expect(!page.contains("<script"))
        #expect(!page.contains("alert(1)</"))
        #expect(!page.contains("<b>"))
        let escaped = "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;&lt;b&gt;"
        #expect(occurrences(of: escaped, in: page) == 6)  // container twice
        #expect(page.contains(#"value="\#(escaped)""#))
    }

    @Test func htmlEscaping() {
        #expect(WebEscaping.html(#"<a href="x">'&'</a>"#) == "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;")
        #expect(WebEscaping.html("plain é") == "plain é")
    }

    @Test func javaScriptStringEscaping() throws {
        let values = [hostile, "line\nbreak\r\t", "back\\slash", "\u{2028}\u{2029}", "nul\u{0}\u{1F}\u{7F}", "émoji 🙂", "`${x}`", ""]
        for value in values {
            let literal = WebEscaping.javaScriptString(value)
            #expect(try decodeLiteral(literal) == value)
            #expect(!literal.contains("<") && !literal.contains(">") && !literal.contains("'"))
            #expect(!literal.contains("\n") && !literal.contains("\u{2028}"))
        }
        #expect(WebEscaping.javaScriptString("a\"b") == #""a\"b""#)
    }

    @Test func callbackRedirectEncodesTheToken() {
        let token = "ab+cd/ef=="
        #expect(SignInPage.callbackRedirect(callbackURL: "https://app.example/cb", token: token)
            == "https://app.example/cb?ckWebAuthToken=ab%2Bcd%2Fef%3D%3D")
        #expect(SignInPage.callbackRedirect(callbackURL: "https://app.example/cb?x=1", token: token)
            == "https://app.example/cb?x=1&ckWebAuthToken=ab%2Bcd%2Fef%3D%3D")
        #expect(SignInPage.callbackRedirect(callbackURL: "https://app.example/cb?", token: "t")
            == "https://app.example/cb?ckWebAuthToken=t")
        #expect(SignInPage.callbackRedirect(callbackURL: "https://app.example/cb?x=1&", token: "t")
            == "https://app.example/cb?x=1&ckWebAuthToken=t")
        #expect(SignInPage.callbackRedirect(callbackURL: "https://app.example/#/done", token: "t")
            == "https://app.example/?ckWebAuthToken=t#/done")
        #expect(SignInPage.callbackRedirect(callbackURL: "myapp://signed-in", token: "t")
            == "myapp://signed-in?ckWebAuthToken=t")
        #expect(SignInPage.callbackRedirect(callbackURL: "https://app.example/\"'<>", token: hostile)
            == "https://app.example/%22%27%3C%3E?ckWebAuthToken="
                + "%3C%2Fscript%3E%3Cscript%3Ealert%281%29%3C%2Fscript%3E%22%27%26%3Cb%3E")
        #expect(SignInPage.callbackRedirect(callbackURL: "https://app.example/cb", token: "é")
            == "https://app.example/cb?ckWebAuthToken=%C3%A9")
    }

    @Test(arguments: [
        "javascript:alert(1)", "JavaScript:alert(1)", "java\nscript:alert(1)", " javascript:alert(1)",
        "data:text/html,<script>alert(1)</script>", "vbscript:msgbox", "file:///etc/passwd", "https:evil",
        "https:///path", "/relative/path", "", "no scheme", "https://a b/", "1http://x", "https://x/\r\nSet-Cookie: a=b",
    ])
    func unacceptableCallbackURLs(_ url: String) {
        #expect(!SignInPage.isAcceptableCallbackURL(url))
        #expect(SignInPage.callbackRedirect(callbackURL: url, token: "secret-token") == nil)
        let page = SignInPage.success(webAuthToken: "secret-token", callbackURL: url, targetOrigin: nil)
        #expect(!page.contains("secret-token"))
        #expect(!page.contains("<script"))
    }

    @Test(arguments: ["https://app.example/cb", "http://localhost:8080/cb", "myapp://cb", "com.example.app:/oauth"])
    func acceptableCallbackURLs(_ url: String) {
        #expect(SignInPage.isAcceptableCallbackURL(url))
    }

    @Test func successWithCallbackRedirects() {
        let page = SignInPage.success(webAuthToken: "a+b/c=", callbackURL: "https://app.example/cb?x=1&y=2",
                                      targetOrigin: nil)
        let location = "https://app.example/cb?x=1&amp;y=2&amp;ckWebAuthToken=a%2Bb%2Fc%3D"
        #expect(page.contains(#"<meta http-equiv="refresh" content="0; url='\#(location)'">"#))
        #expect(page.contains(#"<a href="\#(location)">"#))
        #expect(!page.contains("a+b/c="))
        #expect(!page.contains("<script"))
    }

    @Test func successWithoutCallbackPostsToTheOpener() throws {
        let page = SignInPage.success(webAuthToken: "tok+/=", callbackURL: nil, targetOrigin: nil)
        #expect(page.contains("window.opener.postMessage({ckWebAuthToken: token}, origin);"))
        #expect(page.contains("window.close();"))
        #expect(page.contains(#"var token = "tok+\/=";"#))
        #expect(page.contains(#"var origin = "*";"#))
        let withOrigin = SignInPage.success(webAuthToken: "t", callbackURL: nil, targetOrigin: "https://app.example")
        #expect(withOrigin.contains(#"var origin = "https:\/\/app.example";"#))
    }

    @Test func successEscapesHostileTokensAndOrigins() throws {
        let page = SignInPage.success(webAuthToken: hostile, callbackURL: nil, targetOrigin: hostile)
        #expect(occurrences(of: "<script>", in: page) == 1)
        #expect(occurrences(of: "</script>", in: page) == 1)
        #expect(!page.contains("alert(1)</"))
        // The literals decode back to the exact values.
        for prefix in ["var token = ", "var origin = "] {
            let line = try #require(page.split(separator: "\n").first { $0.contains(prefix) })
            let literal = line.trimmingCharacters(in: .whitespaces).dropFirst(prefix.count).dropLast()
            #expect(try decodeLiteral(String(literal)) == hostile)
        }
    }

    @Test func tokenLifetimes() {
        #expect(SignInPage.tokenLifetime(keepSignedIn: false) == 1800)
        #expect(SignInPage.tokenLifetime(keepSignedIn: true) == 14 * 86_400)
    }
}
