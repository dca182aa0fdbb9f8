#!/usr/bin/env python3
"""Benchmarks subscriptions and push of the records server (`ubiq serve`): issue 5's figures.

  1. Save-to-notification latency: one client saves a record (records/modify, one record per
     request, one request at a time); a subscriber connected by WebSocket to the webcourierURL
     receives the query notification. Time from sending the save to receiving the frame, p50/p99.
     Three placements: the subscriber on the same server process; on another process sharing
     the PostgreSQL store (LISTEN/NOTIFY); on another process sharing the SQLite data directory
     (datagrams). Peer in the same run: the save request alone (records/modify round trip).
  2. 1,000 subscriptions x 10,000 saves: 1,000 query subscriptions (10 users x 100, on 10 record
     types, with INT64 range filters and firesOn sets), then 10,000 record saves (creates and
     updates, 50 per request). Every notification delivered is counted per user (from the log,
     by long-poll) and compared with the expected set computed here from the same rules: all
     delivered, none extra. Reports the saves' throughput against the same saves with no
     subscription (a fresh store), i.e. the cost of matching.

Each measurement runs --runs times (fresh stores and server processes each time); the Markdown
report gives the median of the runs and their range.

Usage: Benchmarks/push/bench-push.py [--ubiq PATH] [--saves N] [--latency-samples N] [--runs N]
                                     [--stores sqlite,postgres] [--json FILE] [--work DIR] [--keep]

Needs a release `ubiq` (default: .build-bench/release/ubiq; build it with
`swift build -c release --scratch-path .build-bench --product ubiq`). PostgreSQL comes from
scripts/postgres (a throw-away cluster under /var/tmp, stopped and removed at the end). Servers
run with `--rate-limit 0` (the per-caller limiter would otherwise throttle the writer). Python 3
standard library only (a minimal WebSocket client is below). See Benchmarks/push/README.md.
"""

import argparse
from collections import Counter, deque
import base64
import http.client
import json
import os
import random
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
CONTAINER = "iCloud.bench.push"


class BenchError(Exception):
    """A failure reported as one clear line (and whatever output explains it)."""


def log(*args):
    print("bench-push:", *args, file=sys.stderr, flush=True)


def run(cmd):
    """Runs a command; its stdout, or BenchError with its output."""
    try:
        result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise BenchError(f"could not run {' '.join(map(str, cmd))}: {error}")
    if result.returncode != 0:
        raise BenchError(f"failed ({result.returncode}): {' '.join(map(str, cmd))}\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
    return result.stdout


class Server:
    """A `ubiq serve` process (killed at the end of the run whatever happens)."""

    running = []

    def __init__(self, ubiq, store_args, label):
        self.label = label
        self.output = deque(maxlen=200)
        self.stopping = False
        command = [ubiq, "serve"] + store_args + ["--port", "0", "--rate-limit", "0", "--log-level", "warning"]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        Server.running.append(self)
        self.url = None
        self.ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.time() + 60
        while not self.ready.wait(0.1):
            if self.process.poll() is not None or time.time() > deadline:
                self.stop()
                raise BenchError(f"ubiq serve ({label}) did not start: {' '.join(command)}\n" + "".join(self.output))
        parsed = urllib.parse.urlparse(self.url)
        self.host, self.port = parsed.hostname, parsed.port

    def _read(self):
        for line in self.process.stdout:
            self.output.append(line)
            if self.url is None and "listening on " in line:
                self.url = line.split("listening on ", 1)[1].strip()
                self.ready.set()

    def check(self):
        """BenchError if the process ended by itself."""
        if self.process.poll() is not None and not self.stopping:
            raise BenchError(f"ubiq serve ({self.label}) exited ({self.process.returncode}):\n" + "".join(self.output))

    def warnings(self):
        return [line.rstrip() for line in self.output if "listening on" not in line]

    def stop(self):
        self.stopping = True
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                log(f"ubiq serve ({self.label}) did not stop within 30 s of SIGTERM; killed")
                self.process.kill()
                self.process.wait()
        if self in Server.running:
            Server.running.remove(self)


class Client:
    """One keep-alive HTTP connection to a server, as one user."""

    def __init__(self, server, api, web):
        self.server = server
        self.connection = http.client.HTTPConnection(server.host, server.port, timeout=600)
        self.query = urllib.parse.urlencode({"ckAPIToken": api, "ckWebAuthToken": web})

    def _request(self, method, path, body=None):
        try:
            self.connection.request(method, path, body=body, headers={"Content-Type": "text/plain"} if body else {})
            response = self.connection.getresponse()
            return response.status, response.read()
        except (OSError, http.client.HTTPException) as error:
            self.connection.close()
            self.server.check()
            raise BenchError(f"{method} {path.split('?')[0]} to {self.server.label} failed: {error!r}")

    def post(self, database, operation, body, items=None):
        """POSTs a Web Services request (a JSON value or its text); the answer, after checking that
        no item of `items` failed."""
        path = f"/database/1/{CONTAINER}/development/{database}/{operation}?{self.query}"
        status, data = self._request("POST", path, body if isinstance(body, str) else json.dumps(body))
        if status != 200:
            raise BenchError(f"{operation} answered {status}: {data[:500]!r}")
        answer = json.loads(data)
        for item in answer.get(items, []) if items else []:
            if "serverErrorCode" in item:
                raise BenchError(f"{operation}: an item failed: {json.dumps(item)[:500]}")
        return answer

    def poll(self, path, **parameters):
        """A long-poll of a webcourier path."""
        status, data = self._request("GET", f"{path}?{urllib.parse.urlencode(parameters)}")
        if status != 200:
            raise BenchError(f"long-poll {path} answered {status}: {data[:500]!r}")
        return json.loads(data)

    def close(self):
        self.connection.close()


class WebSocket:
    """A minimal RFC 6455 client: text frames in, pongs out (the server pings every 30 s)."""

    def __init__(self, host, port, path):
        self.sock = socket.create_connection((host, port), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
        self.sock.sendall(request.encode())
        self.buffer = b""
        while b"\r\n\r\n" not in self.buffer:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise BenchError("the WebSocket upgrade was refused (connection closed)")
            self.buffer += chunk
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n")[0] + b" ":
            raise BenchError(f"the WebSocket upgrade was refused: {head[:200]!r} {self.buffer[:300]!r}")
        self.sock.settimeout(None)
        self.send_lock = threading.Lock()

    def _read(self, count):
        while len(self.buffer) < count:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError
            self.buffer += chunk
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def _send(self, opcode, payload=b""):
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        if len(payload) < 126:
            header = bytes([0x80 | opcode, 0x80 | len(payload)])
        else:
            header = bytes([0x80 | opcode, 0x80 | 126]) + struct.pack(">H", len(payload))
        with self.send_lock:
            self.sock.sendall(header + mask + masked)

    def receive(self):
        """The next text message (as JSON)."""
        message = b""
        while True:
            first, second = self._read(2)
            length = second & 0x7F
            if length == 126:
                length = struct.unpack(">H", self._read(2))[0]
            elif length == 127:
                length = struct.unpack(">Q", self._read(8))[0]
            payload = self._read(length)
            opcode = first & 0x0F
            if opcode == 9:  # ping
                self._send(10, payload)
                continue
            if opcode == 10:  # pong
                continue
            if opcode == 8:  # close
                raise EOFError
            message += payload
            if first & 0x80:
                return json.loads(message)

    def close(self):
        try:
            self._send(8, struct.pack(">H", 1000))
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass


def percentile(values, p):
    """Nearest rank on the sorted values."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def setup(ubiq, store_args, users=1):
    """Adds the container (its API token) and `users` users (their web-auth tokens)."""
    api = run([ubiq, "admin"] + store_args + ["container", "add", CONTAINER]).strip()
    webs = [run([ubiq, "admin"] + store_args + ["user", "add", f"user{index}"]).strip() for index in range(users)]
    return api, webs


def webcourier_path(answer):
    """The path of the webcourierURL a tokens/create answer gives (checked against the token)."""
    url, token = answer.get("webcourierURL"), answer.get("apnsToken")
    if not url or not token:
        raise BenchError(f"tokens/create gave no webcourierURL or apnsToken: {answer}")
    path = urllib.parse.urlparse(url).path
    if not path.endswith(f"/push/1/{token}"):
        raise BenchError(f"unexpected webcourierURL {url}")
    return path


# 1. Latency

def latency(ubiq, store_args, samples, warmup, placement, label):
    """Save-to-notification latency with the subscriber on the writer's process or another."""
    api, (web,) = setup(ubiq, store_args)
    servers = [Server(ubiq, store_args, f"{label} writer")]
    if placement == "other":
        servers.append(Server(ubiq, store_args, f"{label} subscriber"))
    writer = None
    ws = None
    try:
        writer = Client(servers[0], api, web)
        writer.post("private", "subscriptions/modify", {"operations": [{"operationType": "create", "subscription": {
            "subscriptionID": "bench", "subscriptionType": "query", "query": {"recordType": "Note", "filterBy": []},
            "firesOn": ["create", "update"]}}]}, items="subscriptions")
        path = webcourier_path(writer.post("private", "tokens/create", {"apnsEnvironment": "development"}))
        if placement == "other":
            # SQLite: the writer re-reads the list of peer processes once a second.
            time.sleep(2)
        subscriber_server = servers[-1]
        ws = WebSocket(subscriber_server.host, subscriber_server.port, path)
        ready = ws.receive()
        if ready.get("type") != "ready":
            raise BenchError(f"the first WebSocket frame is not ready: {ready}")
        received = {}
        duplicates = []
        ended = []
        arrived = threading.Condition()

        def listen():
            try:
                while True:
                    frame = ws.receive()
                    now = time.perf_counter()
                    with arrived:
                        if frame.get("type") == "notification":
                            name = frame["notification"]["ck"]["qry"]["rid"]
                            if name in received:
                                duplicates.append(name)
                            received[name] = now
                        else:
                            ended.append(f"unexpected frame {frame}")
                        arrived.notify_all()
            except (EOFError, OSError, ValueError) as error:
                with arrived:
                    ended.append(f"the WebSocket ended: {error!r}")
                    arrived.notify_all()

        threading.Thread(target=listen, daemon=True).start()
        delays, saves = [], []
        for index in range(samples + warmup):
            name = f"n{index}"
            body = {"operations": [{"operationType": "create", "record": {"recordName": name, "recordType": "Note",
                                                                          "fields": {"i": {"value": index, "type": "INT64"}}}}]}
            sent = time.perf_counter()
            writer.post("private", "records/modify", body, items="records")
            answered = time.perf_counter()
            with arrived:
                if not arrived.wait_for(lambda: name in received or ended, timeout=30):
                    for server in servers:
                        server.check()
                    raise BenchError(f"no notification for {name} within 30 s ({label})")
                if name not in received:
                    raise BenchError(f"{ended[0]} ({label}, waiting for {name})")
                got = received[name]
            if index >= warmup:
                delays.append((got - sent) * 1000)
                saves.append((answered - sent) * 1000)
        time.sleep(0.2)
        with arrived:
            extra = len(received) - (samples + warmup) + len(duplicates)
        for server in servers:
            server.check()
        return {"placement": placement, "samples": samples, "extra_notifications": extra,
                "p50_ms": percentile(delays, 50), "p99_ms": percentile(delays, 99), "max_ms": max(delays),
                "over_1s": sum(1 for delay in delays if delay > 1000),
                "save_p50_ms": percentile(saves, 50), "save_p99_ms": percentile(saves, 99),
                "notified_before_answer": sum(1 for delay, save in zip(delays, saves) if delay < save)}
    finally:
        if ws:
            ws.close()
        if writer:
            writer.close()
        for server in servers:
            server.stop()


# 2. Fan-out

TYPES = [f"T{index}" for index in range(10)]
USERS = 10
PER_USER = 100
BATCH = 50
FO = {"create": 1, "update": 2}


def subscriptions_for(user):
    """100 query subscriptions of one user: type, an INT64 range on `n`, firesOn."""
    rng = random.Random(1000 + user)
    result = []
    for index in range(PER_USER):
        low = rng.randrange(0, 1000)
        high = low + rng.randrange(1, 200)
        fires = rng.choice([["create"], ["update"], ["create", "update"]])
        result.append({"id": f"u{user}-s{index}", "type": rng.choice(TYPES), "low": low, "high": high, "firesOn": fires})
    return result


def save_plan(saves, seed=7):
    """The saves, in batches of BATCH: (name, type, value of `n`, create|update). About 30 % update
    a record saved in an earlier batch (a record is saved at most once per batch, so each save's
    kind is known here)."""
    rng = random.Random(seed)
    names, types = [], {}
    batches, batch, in_batch = [], [], set()
    for index in range(saves):
        name = None
        if names and rng.random() < 0.3:
            name = rng.choice(names)
            if name in in_batch:
                name = None
        if name is None:
            name, kind = f"r{index}", "create"
            types[name] = rng.choice(TYPES)
            names.append(name)
        else:
            kind = "update"
        batch.append((name, types[name], rng.randrange(0, 1200), kind))
        in_batch.add(name)
        if len(batch) == BATCH:
            batches.append(batch)
            batch, in_batch = [], set()
    if batch:
        batches.append(batch)
    return batches


def expected_notifications(plan):
    """user → Counter of (record name, subscription ID, fo) the plan must notify."""
    expected = {}
    for user in range(USERS):
        by_type = {}
        for sub in subscriptions_for(user):
            by_type.setdefault(sub["type"], []).append(sub)
        counter = Counter()
        for batch in plan:
            for name, record_type, value, kind in batch:
                for sub in by_type.get(record_type, []):
                    if sub["low"] <= value < sub["high"] and kind in sub["firesOn"]:
                        counter[(name, sub["id"], FO[kind])] += 1
        expected[user] = counter
    return expected


def modify_body(batch):
    return {"operations": [{"operationType": "forceReplace", "record": {
        "recordName": name, "recordType": record_type, "fields": {"n": {"value": value, "type": "INT64"}}}}
        for name, record_type, value, _ in batch]}


def timed_saves(writer, plan):
    """Posts the plan's batches one request at a time: saves/s and the requests' p50/p99 (ms)."""
    bodies = [json.dumps(modify_body(batch)) for batch in plan]  # prepared before the clock starts
    times = []
    began = time.perf_counter()
    for batch, body in zip(plan, bodies):
        sent = time.perf_counter()
        answer = writer.post("public", "records/modify", body, items="records")
        times.append((time.perf_counter() - sent) * 1000)
        if len(answer.get("records", [])) != len(batch):
            raise BenchError(f"records/modify answered {len(answer.get('records', []))} records for {len(batch)}")
    elapsed = time.perf_counter() - began
    return sum(len(batch) for batch in plan) / elapsed, percentile(times, 50), percentile(times, 99)


def fanout(ubiq, store_args, plan, expected, label):
    """1,000 subscriptions x the plan's saves on the public database: counted delivery."""
    api, webs = setup(ubiq, store_args, users=USERS)
    server = Server(ubiq, store_args, label)
    clients = [Client(server, api, web) for web in webs]
    try:
        began = time.perf_counter()
        for user, client in enumerate(clients):
            operations = [{"operationType": "create", "subscription": {
                "subscriptionID": sub["id"], "subscriptionType": "query", "firesOn": sub["firesOn"],
                "query": {"recordType": sub["type"], "filterBy": [
                    {"fieldName": "n", "comparator": "GREATER_THAN_OR_EQUALS", "fieldValue": {"value": sub["low"], "type": "INT64"}},
                    {"fieldName": "n", "comparator": "LESS_THAN", "fieldValue": {"value": sub["high"], "type": "INT64"}}]}}}
                for sub in subscriptions_for(user)]
            answer = client.post("public", "subscriptions/modify", {"operations": operations}, items="subscriptions")
            if len(answer.get("subscriptions", [])) != len(operations):
                raise BenchError(f"subscriptions/modify answered {len(answer.get('subscriptions', []))} of {len(operations)}")
        subscribe_s = time.perf_counter() - began
        paths = [webcourier_path(client.post("private", "tokens/create", {"apnsEnvironment": "development"})) for client in clients]
        starts = [client.poll(path, timeout=0)["position"] for client, path in zip(clients, paths)]

        saves_per_s, request_p50, request_p99 = timed_saves(clients[0], plan)

        delivered = missing = extra = wrong_positions = 0
        began = time.perf_counter()
        for user, (client, path) in enumerate(zip(clients, paths)):
            position, got, waits = starts[user], Counter(), 0
            want = sum(expected[user].values())
            while True:
                # Every notification is in the log before the save's answer: timeout=0 suffices;
                # a few waits more when some are missing, to tell "late" from "never".
                body = client.poll(path, position=position, timeout=0 if sum(got.values()) >= want or waits >= 3 else 2)
                if body.get("resync"):
                    raise BenchError(f"user{user}: the log asked for a resync (pruned during the run?) at position {position}")
                page = body.get("notifications", [])
                if not page:
                    if sum(got.values()) >= want or waits >= 3:
                        break
                    waits += 1
                    continue
                for payload in page:
                    qry = payload["ck"]["qry"]
                    got[(qry["rid"], qry["sid"], qry["fo"])] += 1
                position = body["position"]
            count = sum(got.values())
            if position - starts[user] != count:
                wrong_positions += 1
                log(f"user{user}: the log moved {position - starts[user]} positions for {count} notifications")
            delivered += count
            extra += sum((got - expected[user]).values())
            missing += sum((expected[user] - got).values())
        drain_s = time.perf_counter() - began
        server.check()
        return {"store": label, "subscriptions": USERS * PER_USER, "saves": sum(len(batch) for batch in plan),
                "expected": sum(sum(counter.values()) for counter in expected.values()), "delivered": delivered,
                "missing": missing, "extra": extra, "users_with_position_gaps": wrong_positions,
                "saves_per_s": saves_per_s, "request_p50_ms": request_p50, "request_p99_ms": request_p99,
                "subscribe_s": subscribe_s, "drain_s": drain_s}
    finally:
        for client in clients:
            client.close()
        server.stop()


def baseline_saves(ubiq, store_args, plan, label):
    """The same saves with no subscription (a fresh store): the peer for the matching cost."""
    api, (web,) = setup(ubiq, store_args)
    server = Server(ubiq, store_args, label)
    writer = Client(server, api, web)
    try:
        saves_per_s, request_p50, request_p99 = timed_saves(writer, plan)
        server.check()
        return {"saves_per_s": saves_per_s, "request_p50_ms": request_p50, "request_p99_ms": request_p99}
    finally:
        writer.close()
        server.stop()


# Report

def summary(values, digits=1):
    """`median (min–max)`, or the value alone for one run."""
    def fmt(value):
        return f"{value:,.{digits}f}"
    if len(values) == 1:
        return fmt(values[0])
    return f"{fmt(statistics.median(values))} ({fmt(min(values))}–{fmt(max(values))})"


def report(results, stores, runs, command):
    names = {"sqlite": "SQLite", "postgres": "PostgreSQL"}
    other = {"sqlite": "datagrams", "postgres": "LISTEN/NOTIFY"}
    lines = [f"Command: `{command}`; {runs} run(s), each figure the median of the runs (range in brackets).", "",
             "| | " + " | ".join(names[kind] for kind in stores) + " |", "|---" * (len(stores) + 1) + "|"]

    def row(title, cell):
        lines.append(f"| {title} | " + " | ".join(cell(kind) for kind in stores) + " |")

    def lat(kind, placement):
        return [entry for entry in results["latency"] if entry["store"] == kind and entry["placement"] == placement]

    def fan(kind):
        return [entry for entry in results["fanout"] if entry["store"] == kind]

    placements = (("same", "subscriber on the writer's process"), ("other", "subscriber on another process"))
    for placement, title in placements if results["latency"] else ():
        row(f"**save → notification (WebSocket), {title}**: p50 / p99 ms",
            lambda kind: f"**{summary([e['p50_ms'] for e in lat(kind, placement)], 2)}** / "
                         f"{summary([e['p99_ms'] for e in lat(kind, placement)], 2)}"
                         + (f" ({other[kind]})" if placement == "other" else ""))
        row("peer, same run: `records/modify` round trip alone (1 record): p50 / p99 ms",
            lambda kind: f"{summary([e['save_p50_ms'] for e in lat(kind, placement)], 2)} / "
                         f"{summary([e['save_p99_ms'] for e in lat(kind, placement)], 2)}")
        row("ratio notification / save alone: p50 / p99",
            lambda kind: f"{summary([e['p50_ms'] / e['save_p50_ms'] for e in lat(kind, placement)], 2)} / "
                         f"{summary([e['p99_ms'] / e['save_p99_ms'] for e in lat(kind, placement)], 2)}")
        row("slowest notification; over 1 s (all runs)",
            lambda kind: f"{max(e['max_ms'] for e in lat(kind, placement)):,.1f} ms; "
                         f"{sum(e['over_1s'] for e in lat(kind, placement))} of {sum(e['samples'] for e in lat(kind, placement))}")
    if not results["fanout"]:
        return "\n".join(lines)
    row("**1,000 query subscriptions × {:,} saves** (50 per request, one request at a time): saves/s".format(
        fan(stores[0])[0]["saves"] if fan(stores[0]) else 0),
        lambda kind: "**" + summary([e["saves_per_s"] for e in fan(kind)], 0) + "**")
    row("peer: the same saves, no subscription (fresh store): saves/s",
        lambda kind: summary([e["baseline"]["saves_per_s"] for e in fan(kind)], 0))
    row("ratio with / without subscriptions",
        lambda kind: summary([e["saves_per_s"] / e["baseline"]["saves_per_s"] for e in fan(kind)], 2))
    row("one 50-record request with / without subscriptions: p50 ms",
        lambda kind: f"{summary([e['request_p50_ms'] for e in fan(kind)], 1)} / "
                     f"{summary([e['baseline']['request_p50_ms'] for e in fan(kind)], 1)}")
    row("notifications expected / delivered / missing / extra (all runs)",
        lambda kind: " / ".join(f"{sum(e[key] for e in fan(kind)):,}" for key in ("expected", "delivered", "missing", "extra")))
    row("reading them all back by long-poll (10 users, pages of 100): s",
        lambda kind: summary([e["drain_s"] for e in fan(kind)], 1))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description="Benchmarks subscriptions and push of `ubiq serve` (see the docstring).")
    parser.add_argument("--ubiq", default=str(REPO / ".build-bench/release/ubiq"), help="the ubiq binary (a release build)")
    parser.add_argument("--saves", type=int, default=10_000, help="saves of the fan-out test (default 10,000)")
    parser.add_argument("--latency-samples", type=int, default=500, help="timed saves per latency test (default 500)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed saves before them (default 20)")
    parser.add_argument("--runs", type=int, default=3, help="runs of everything (default 3)")
    parser.add_argument("--stores", default="sqlite,postgres", help="sqlite, postgres or both (default)")
    parser.add_argument("--sections", default="latency,fanout", help="latency, fanout or both (default)")
    parser.add_argument("--json", help="write every run's raw figures here")
    parser.add_argument("--work", help="work folder (default: a new /var/tmp/bench-push.*, removed at the end)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args()

    stores = [kind.strip() for kind in args.stores.split(",") if kind.strip()]
    sections = [section.strip() for section in args.sections.split(",") if section.strip()]
    for kind in stores:
        if kind not in ("sqlite", "postgres"):
            parser.error(f"--stores: unknown store {kind!r} (sqlite, postgres)")
    for section in sections:
        if section not in ("latency", "fanout"):
            parser.error(f"--sections: unknown section {section!r} (latency, fanout)")
    if min(args.saves, args.latency_samples, args.runs) < 1 or args.warmup < 0:
        parser.error("--saves, --latency-samples and --runs must be at least 1, --warmup at least 0")
    ubiq = os.path.abspath(args.ubiq)
    if not os.access(ubiq, os.X_OK):
        parser.error(f"--ubiq {ubiq}: no such executable (build it: swift build -c release --scratch-path .build-bench --product ubiq)")

    work = Path(args.work).resolve() if args.work else Path(tempfile.mkdtemp(prefix="bench-push.", dir="/var/tmp"))
    work.mkdir(parents=True, exist_ok=True)
    pg_dir = None
    results = {"latency": [], "fanout": []}
    command = "Benchmarks/push/bench-push.py " + " ".join(sys.argv[1:])
    try:
        pg_url = None
        if "postgres" in stores:
            pg_dir = f"/var/tmp/bench-push-pg-{os.getpid()}"
            log(f"starting PostgreSQL in {pg_dir}")
            pg_url = run([str(REPO / "scripts/postgres"), "start", pg_dir]).strip()

        def store_args(kind, name):
            if kind == "sqlite":
                return ["--data", str(work / name)]
            return ["--database", pg_url, "--schema", f"bench_{name}", "--blobs", str(work / f"blobs-{name}")]

        plan = save_plan(args.saves)
        expected = expected_notifications(plan) if "fanout" in sections else None
        for run_index in range(1, args.runs + 1):
            for kind in stores:
                tag = f"{kind}{run_index}"
                if "latency" in sections:
                    for placement in ("same", "other"):
                        log(f"run {run_index}/{args.runs}, {kind}: latency, subscriber on the {placement} process")
                        entry = {"store": kind, "run": run_index,
                                 **latency(ubiq, store_args(kind, f"lat_{placement}_{run_index}"), args.latency_samples,
                                           args.warmup, placement, f"{kind} latency {placement} run {run_index}")}
                        log(f"  p50 {entry['p50_ms']:.2f} ms, p99 {entry['p99_ms']:.2f} ms; save alone p50 {entry['save_p50_ms']:.2f} ms, "
                            f"p99 {entry['save_p99_ms']:.2f} ms; over 1 s: {entry['over_1s']}; extra: {entry['extra_notifications']}")
                        results["latency"].append(entry)
                if "fanout" in sections:
                    log(f"run {run_index}/{args.runs}, {kind}: 1,000 subscriptions x {args.saves:,} saves")
                    fan = fanout(ubiq, store_args(kind, f"fan_{run_index}"), plan, expected, kind)
                    log(f"  {fan['saves_per_s']:.0f} saves/s; expected {fan['expected']:,}, delivered {fan['delivered']:,}, "
                        f"missing {fan['missing']:,}, extra {fan['extra']:,}")
                    log(f"run {run_index}/{args.runs}, {kind}: the same saves without subscriptions")
                    fan["baseline"] = baseline_saves(ubiq, store_args(kind, f"base_{run_index}"), plan, f"{kind} baseline")
                    log(f"  {fan['baseline']['saves_per_s']:.0f} saves/s")
                    fan["run"] = run_index
                    results["fanout"].append(fan)
                if args.json:
                    Path(args.json).write_text(json.dumps(results, indent=2))
    except BenchError as error:
        log(f"error: {error}")
        if results["latency"] or results["fanout"]:
            log("partial results:\n" + json.dumps(results, indent=2))
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    finally:
        for server in list(Server.running):
            server.stop()
        if pg_dir:
            try:
                run([str(REPO / "scripts/postgres"), "stop", pg_dir])
            except BenchError as error:
                log(f"could not stop PostgreSQL: {error}")
        if not args.keep and not args.work:
            shutil.rmtree(work, ignore_errors=True)

    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    print(report(results, stores, args.runs, command))
    failed = sum(entry["missing"] + entry["extra"] + entry["users_with_position_gaps"] for entry in results["fanout"])
    failed += sum(entry["extra_notifications"] for entry in results["latency"])
    if failed:
        log("FAILED: notifications missing or extra (see above)")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
