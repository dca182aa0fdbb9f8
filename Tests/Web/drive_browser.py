#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The web's Drive in a real browser: Playwright (PyPI) driving Debian's chromium, headless.

Run by DriveBrowserTests (Tests/UbiquitySyncTests/Web/) against a real `ubiq serve` with a real
`ubiq daemon` device whose synced folder is --folder; every step that changes something is
checked in that folder too. Screenshots go to --screenshots. Exits 0 when every step passed;
otherwise prints the failing step and exits 1.
"""
import argparse
import json
import pathlib
import re
import shutil
import sqlite3
import sys
import time
import urllib.parse
import urllib.request

from playwright.sync_api import expect, sync_playwright

parser = argparse.ArgumentParser()
parser.add_argument("--url", required=True)
parser.add_argument("--user", required=True)
parser.add_argument("--password", required=True)
parser.add_argument("--folder", required=True, help="the device's synced folder")
parser.add_argument("--device-file", required=True, help="a file the device uploaded before")
parser.add_argument("--screenshots", required=True)
parser.add_argument("--server-database", required=True, help="the server's records.sqlite (to make a link expire)")
parser.add_argument("--console-container", required=True, help="a container the user develops")
parser.add_argument("--api-token", required=True, help="the console container's API token")
parser.add_argument("--web-token", required=True, help="the user's web-auth token")
parser.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser"))
args = parser.parse_args()

folder = pathlib.Path(args.folder)
shots = pathlib.Path(args.screenshots)
shots.mkdir(parents=True, exist_ok=True)
(shots / "failure.png").unlink(missing_ok=True)
expect.set_options(timeout=30_000)


def step(name):
    print(f"step: {name}", flush=True)


def wait_for(what, check, seconds=120):
    """Polls `check` until it holds: a hang guard, never a timing assertion."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting until {what}")


def read(name):
    path = folder / name
    return path.read_bytes() if path.exists() else None


def api(operation, body):
    """A CloudKit Web Services request to the console container's public database, as an app sends it."""
    query = urllib.parse.urlencode({"ckAPIToken": args.api_token, "ckWebAuthToken": args.web_token})
    url = f"{args.url}/database/1/{args.console_container}/development/public/{operation}?{query}"
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def row(page, name):
    return page.locator("tr", has=page.get_by_role("link", name=name, exact=True))


with sync_playwright() as playwright:
    # --no-sandbox: CI runs as root, where Chromium's sandbox does not start
    browser = playwright.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
    page = browser.new_page()
    try:

        step("signing in: a wrong password is refused, the right one opens the Drive")
        page.goto(args.url + "/")
        expect(page).to_have_url(re.compile(r"/signin$"))
        page.get_by_label("User name").fill(args.user)
        page.get_by_label("Password").fill("not the password")
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("alert")).to_contain_text("wrong")
        page.get_by_label("Password").fill(args.password)
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("navigation", name="Main")).to_contain_text("Sign out")
        cookie = next(c for c in page.context.cookies() if c["name"] == "ubiq_drive")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict", cookie

        step("a file a device uploaded is listed")
        expect(page.get_by_role("link", name=args.device_file, exact=True)).to_be_visible()
        page.screenshot(path=str(shots / "drive.png"), full_page=True)

        step("uploading from the page: it arrives in the device's folder")
        page.set_input_files("#upload", files=[{"name": "from-the-web.txt", "mimeType": "text/plain", "buffer": b"uploaded from the browser"}])
        expect(page.get_by_role("link", name="from-the-web.txt", exact=True)).to_be_visible()
        wait_for("the device has the upload", lambda: read("from-the-web.txt") == b"uploaded from the browser")

        step("making a folder, and moving the upload into it")
        page.get_by_label("New folder name").fill("Reports")
        page.get_by_role("button", name="New folder").click()
        expect(page.get_by_role("link", name="Reports", exact=True)).to_be_visible()
        wait_for("the device has the folder", lambda: (folder / "Reports").is_dir())

        step("renaming: the device's file follows")
        line = row(page, "from-the-web.txt")
        line.get_by_label("New name for from-the-web.txt").fill("renamed-on-the-web.txt")
        line.get_by_role("button", name="Rename").click()
        expect(page.get_by_role("link", name="renamed-on-the-web.txt", exact=True)).to_be_visible()
        wait_for("the device has the new name", lambda: read("renamed-on-the-web.txt") == b"uploaded from the browser" and read("from-the-web.txt") is None)

        step("deleting, finding it in Recently Deleted, restoring it")
        row(page, "renamed-on-the-web.txt").get_by_role("button", name="Delete renamed-on-the-web.txt").click()
        expect(page.get_by_role("status")).to_contain_text("Recently Deleted")
        expect(page.get_by_role("link", name="renamed-on-the-web.txt", exact=True)).to_have_count(0)
        wait_for("the device lost the file", lambda: read("renamed-on-the-web.txt") is None)
        page.get_by_role("link", name="Recently Deleted").click()
        expect(page.get_by_role("heading", name="Recently Deleted")).to_be_visible()
        page.screenshot(path=str(shots / "recently-deleted.png"), full_page=True)
        page.get_by_role("button", name="Restore renamed-on-the-web.txt").click()
        expect(page.get_by_role("status")).to_contain_text("Restored")
        wait_for("the device has the file back", lambda: read("renamed-on-the-web.txt") == b"uploaded from the browser")

        step("restoring an older version: the device's file changes back")
        original = read(args.device_file)
        (folder / args.device_file).write_bytes(b"a second version, written on the device")
        page.goto(args.url + "/")
        row(page, args.device_file).get_by_role("link", name="Versions").click()
        expect(page.get_by_role("heading")).to_contain_text("Versions of")

        def two_versions():
            page.reload()
            return page.get_by_role("button", name=re.compile("^Restore the version")).count() >= 1

        wait_for("the server keeps both versions", two_versions)
        page.screenshot(path=str(shots / "versions.png"), full_page=True)
        page.get_by_role("button", name=re.compile("^Restore the version")).last.click()
        expect(page.get_by_role("status")).to_contain_text("restored")
        wait_for("the device has the older version", lambda: read(args.device_file) == original)

        step("names holding markup are shown as text")
        page.goto(args.url + "/")
        page.get_by_label("New folder name").fill("<img src=x onerror=window.pwned=1>")
        page.get_by_role("button", name="New folder").click()
        expect(page.get_by_role("link", name="<img src=x onerror=window.pwned=1>", exact=True)).to_be_visible()
        assert page.evaluate("window.pwned") is None, "a stored name ran as script"

        step("a share link opens without an account; a password link asks for it; an expired link is refused")
        page.goto(args.url + "/")
        page.get_by_role("link", name=f"Share {args.device_file}").click()
        page.get_by_label("Expires after (days)").fill("2")
        page.get_by_role("button", name="Make the link").click()
        link = page.get_by_label("Link", exact=True).input_value()
        assert "/s/" in link, link
        stranger = browser.new_context()
        visitor = stranger.new_page()
        visitor.goto(link)
        expect(visitor.get_by_role("heading", name=args.device_file)).to_be_visible()
        with visitor.expect_download() as download:
            visitor.get_by_role("link", name="Download").click()
        assert pathlib.Path(download.value.path()).read_bytes() == read(args.device_file)
        visitor.screenshot(path=str(shots / "share-link.png"), full_page=True)
        page.goto(args.url + "/")
        page.get_by_role("link", name="Share Reports").click()
        page.get_by_label("Password (optional)").fill("open sesame")
        page.get_by_role("button", name="Make the link").click()
        locked = page.get_by_label("Link", exact=True).input_value()
        visitor.goto(locked)
        visitor.get_by_label("Password", exact=True).fill("wrong")
        visitor.get_by_role("button", name="Open").click()
        expect(visitor.get_by_role("alert")).to_contain_text("not the link's password")
        visitor.get_by_label("Password", exact=True).fill("open sesame")
        visitor.get_by_role("button", name="Open").click()
        expect(visitor.get_by_role("heading", name="Reports")).to_be_visible()
        # the first link expires (its row is moved into the past); the second is revoked
        with sqlite3.connect(args.server_database) as db:
            db.execute("UPDATE share_links SET expires_at = 1 WHERE path = ?", (args.device_file,))
        visitor.goto(link)
        expect(visitor.get_by_role("alert")).to_contain_text("expired")
        page.goto(args.url + "/shares")
        page.get_by_role("button", name="Revoke the link to Reports").click()
        expect(page.get_by_role("status")).to_contain_text("revoked")
        visitor.goto(locked)
        expect(visitor.get_by_role("alert")).to_contain_text("revoked")
        stranger.close()

        step("in the Console, see a record saved through the API, and the request in the live log")
        saved = api("records/modify", {"operations": [{"operationType": "create", "record": {
            "recordName": "console-note", "recordType": "Note",
            "fields": {"title": {"value": "Saved through the API"}, "rank": {"value": 7}}}}]})
        assert saved["records"][0]["recordName"] == "console-note", saved
        page.goto(args.url + "/console")
        page.get_by_role("link", name=args.console_container).click()
        expect(page.get_by_role("heading", name="Records")).to_be_visible()
        page.get_by_role("link", name="console-note").click()
        expect(page.get_by_role("heading", name="console-note")).to_be_visible()
        expect(page.get_by_role("row", name=re.compile("title"))).to_contain_text("Saved through the API")
        page.screenshot(path=str(shots / "console-record.png"), full_page=True)
        page.get_by_role("navigation", name="Container").get_by_role("link", name="Request log").click()
        expect(page.locator("#log-rows")).to_contain_text("records/modify")
        api("records/lookup", {"records": [{"recordName": "console-note"}]})
        expect(page.locator("#log-rows tr").first).to_contain_text("records/lookup")
        page.screenshot(path=str(shots / "console-log.png"), full_page=True)
        page.get_by_role("navigation", name="Container").get_by_role("link", name="Schema").click()
        expect(page.get_by_role("heading", name="Development → production")).to_be_visible()
        expect(page.get_by_text("adds record type Note")).to_be_visible()
        page.get_by_role("button", name="Deploy to production").click()
        expect(page.get_by_role("status")).to_contain_text("Deployed to production")
        page.get_by_role("navigation", name="Container").get_by_role("link", name="Telemetry").click()
        expect(page.get_by_role("row").filter(has_text="records/modify")).to_be_visible()
        page.screenshot(path=str(shots / "console-telemetry.png"), full_page=True)

        step("signing out ends the session")
        page.get_by_role("button", name=re.compile("^Sign out")).click()
        expect(page).to_have_url(re.compile(r"/signin$"))
        page.goto(args.url + "/trash")
        expect(page).to_have_url(re.compile(r"/signin$"))
    except BaseException:
        page.screenshot(path=str(shots / "failure.png"), full_page=True)
        print("page at failure:", page.url, flush=True)
        print(page.inner_text("body"), flush=True)
        raise
    browser.close()
print("drive: every step passed", flush=True)
