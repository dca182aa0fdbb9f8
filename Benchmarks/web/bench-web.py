#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The web's figures (issue 29), on one machine in one run:

- a 10,000-item folder: the server's time for the page (the request over loopback), and first
  contentful paint in headless Chromium (Debian's chromium, Playwright);
- a name search over 100,000 items: the server's time;
- a 100 MiB upload through the page (Playwright, the page's own script) against the same upload
  by a `ubiq daemon` (file written into its folder → record on the server).

Usage: Benchmarks/web/bench-web.py --ubiq .build/release/ubiq [--items 100000] [--runs 7]
Prints one line per figure (medians, with every run).
"""
import argparse
import base64
import hashlib
import http.cookiejar
import json
import os
import pathlib
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

CONTAINER = "iCloud.org.ubiquity.Drive"

parser = argparse.ArgumentParser()
parser.add_argument("--ubiq", required=True)
parser.add_argument("--items", type=int, default=100_000, help="items in the Drive (10,000 of them in one folder)")
parser.add_argument("--runs", type=int, default=7)
parser.add_argument("--upload-mib", type=int, default=100)
parser.add_argument("--skip-upload", action="store_true")
args = parser.parse_args()
ubiq = str(pathlib.Path(args.ubiq).resolve())
work = pathlib.Path(tempfile.mkdtemp(prefix="bench-web-"))
data = work / "server"
env = dict(os.environ, HOME=str(work / "home"), XDG_CONFIG_HOME=str(work / "config"), XDG_STATE_HOME=str(work / "state"),
           XDG_DATA_HOME=str(work / "data"), XDG_RUNTIME_DIR=str(work / "run"))
for folder in ("home", "config", "state", "data", "run"):
    (work / folder).mkdir(mode=0o700)


def run(*arguments, stdin=None):
    return subprocess.run([ubiq, *arguments], env=env, input=stdin, capture_output=True, text=True, check=True).stdout.strip()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


api = run("admin", "--data", str(data), "container", "add", CONTAINER)
web = run("admin", "--data", str(data), "user", "add", "mei")
run("admin", "--data", str(data), "user", "password", "mei", "--password-stdin", "--keep-tokens", stdin="bench password")
port = free_port()
base = f"http://127.0.0.1:{port}"
server = subprocess.Popen([ubiq, "serve", "--data", str(data), "--port", str(port), "--rate-limit", "0", "--log-level", "warning"],
                          env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
daemon = None
try:
    for _ in range(300):
        try:
            urllib.request.urlopen(base + "/healthz", timeout=1)
            break
        except OSError:
            time.sleep(0.1)

    def modify(operations):
        query = urllib.parse.urlencode({"ckAPIToken": api, "ckWebAuthToken": web})
        body = json.dumps({"zoneID": {"zoneName": "_ubiquityDocuments"}, "operations": operations}).encode()
        request = urllib.request.Request(f"{base}/database/1/{CONTAINER}/development/private/records/modify?{query}", data=body,
                                         headers={"Content-Type": "application/json"})
        answer = json.load(urllib.request.urlopen(request, timeout=300))
        failed = [r for r in answer["records"] if "serverErrorCode" in r]
        assert not failed, failed[:2]

    def item(path, kind="file", content=b""):
        fields = {"path": {"value": path, "type": "STRING"}, "kind": {"value": kind, "type": "STRING"},
                  "size": {"value": len(content), "type": "INT64"}, "modified": {"value": int(time.time() * 1000), "type": "INT64"},
                  "contentHash": {"value": hashlib.sha256(content).hexdigest() if kind == "file" else "", "type": "STRING"},
                  "mode": {"value": 0o644, "type": "INT64"}}
        if content:
            fields["inline"] = {"value": base64.b64encode(content).decode(), "type": "BYTES"}
        return {"operationType": "create", "record": {"recordName": hashlib.sha1(path.encode()).hexdigest(), "recordType": "UbiquityItem", "fields": fields}}

    started = time.monotonic()
    folders = ["big"] + [f"folder-{n:03}" for n in range((args.items - 10_000) // 1000 + 1)]
    modify([item(name, "folder") for name in folders])
    paths = [f"big/item-{n:05}.txt" for n in range(10_000)]
    paths += [f"{folders[1 + n // 1000]}/other-{n:06}.txt" for n in range(max(0, args.items - 10_000 - len(folders)))]
    for start in range(0, len(paths), 200):
        modify([item(path, content=path.encode()) for path in paths[start:start + 200]])
    print(f"setup: {len(paths) + len(folders)} items saved in {time.monotonic() - started:.1f} s", flush=True)

    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    opener.open(base + "/signin", data=urllib.parse.urlencode({"user": "mei", "password": "bench password"}).encode())
    cookie = next(c.value for c in jar if c.name == "ubiq_drive")

    def timed(path):
        times = []
        for _ in range(args.runs):
            begin = time.perf_counter()
            body = opener.open(base + path).read()
            times.append(time.perf_counter() - begin)
        return times, body

    times, body = timed("/?path=big")
    assert b"item-00000.txt" in body and b"10000 items" in body, body[:500]
    print(f"10,000-item folder, page 1 (200 rows): median {statistics.median(times) * 1000:.1f} ms; runs " +
          ", ".join(f"{t * 1000:.1f}" for t in times), flush=True)
    times, body = timed("/?q=item-04242")
    assert b"item-04242.txt" in body
    print(f"name search over {len(paths) + len(folders)} items: median {statistics.median(times) * 1000:.1f} ms; runs " +
          ", ".join(f"{t * 1000:.1f}" for t in times), flush=True)

    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        context = browser.new_context()
        context.add_cookies([{"name": "ubiq_drive", "value": cookie, "url": base}])
        page = context.new_page()
        paints = []
        for _ in range(args.runs):
            page.goto(base + "/?path=big", wait_until="load")
            paints.append(page.evaluate("""() => new Promise((resolve) => new PerformanceObserver((list, observer) => {
                const entry = list.getEntries().find((e) => e.name === 'first-contentful-paint');
                if (entry) { observer.disconnect(); resolve(entry.startTime); }
            }).observe({ type: 'paint', buffered: true }))"""))
        print(f"10,000-item folder, first contentful paint: median {statistics.median(paints):.0f} ms; runs " +
              ", ".join(f"{p:.0f}" for p in paints), flush=True)

        if not args.skip_upload:
            big = work / "upload.bin"
            with open(big, "wb") as out:
                for _ in range(args.upload_mib):
                    out.write(os.urandom(1 << 20))
            page.goto(base + "/")
            begin = time.perf_counter()
            page.set_input_files("#upload", str(big))
            # done when the page, reloaded by its script after the save, lists the file
            page.get_by_role("link", name="upload.bin", exact=True).wait_for(timeout=600_000)
            web_upload = time.perf_counter() - begin
            # the same file by a daemon: written into its folder, done when the server has its record
            folder = work / "home" / "Ubiquity"
            folder.mkdir(parents=True, exist_ok=True)
            daemon = subprocess.Popen([ubiq, "daemon", "--server", base, f"--api-token={api}", f"--web-auth-token={web}",
                                       "--folder", str(folder), "--device-name", "bench", "--log-level", "warning"],
                                      env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(3)

            def has(path):
                query = urllib.parse.urlencode({"ckAPIToken": api, "ckWebAuthToken": web})
                body = json.dumps({"zoneID": {"zoneName": "_ubiquityDocuments"},
                                   "query": {"recordType": "UbiquityItem", "filterBy": [{"fieldName": "path", "comparator": "EQUALS",
                                                                                         "fieldValue": {"value": path}}]}}).encode()
                request = urllib.request.Request(f"{base}/database/1/{CONTAINER}/development/private/records/query?{query}", data=body,
                                                 headers={"Content-Type": "application/json"})
                return bool(json.load(urllib.request.urlopen(request, timeout=60)).get("records"))

            begin = time.perf_counter()
            shutil.copyfile(big, folder / "by-daemon.bin")
            while not has("by-daemon.bin"):
                time.sleep(0.05)
            daemon_upload = time.perf_counter() - begin
            print(f"{args.upload_mib} MiB upload: page {web_upload:.2f} s, daemon {daemon_upload:.2f} s: "
                  f"the page at {daemon_upload / web_upload:.2f}× the daemon's speed", flush=True)
        browser.close()
finally:
    if daemon:
        daemon.terminate()
    server.terminate()
    server.wait()
    shutil.rmtree(work, ignore_errors=True)
