#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Sync benchmark harness (issue 6 figures): two sync devices on loopback, six workloads.

Runs each tool alone (Syncthing from Debian's package; Ubiquity once its sync engine lands), with
the methodology of sync-anchors.md section 9.2, and prints one JSON object per workload per tool
on stdout (progress goes to stderr). Python 3 standard library only.

    Benchmarks/sync/bench-sync.py setup                      # apt-get install syncthing if missing
    Benchmarks/sync/bench-sync.py --quick                    # every workload small (< 5 minutes)
    Benchmarks/sync/bench-sync.py --watcher-delay 1 --markdown out.md
    Benchmarks/sync/bench-sync.py --tools syncthing,ubiquity --ubiq .build/release/ubiq

See Benchmarks/sync/README.md for what each counter means.
"""

import argparse
import fcntl
import hashlib
import json
import math
import os
import random
import re
import shutil
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import xml.etree.ElementTree as ET

CLK_TCK = os.sysconf("SC_CLK_TCK")
POLL_S = 0.020          # workload 1: poll every 20 ms (section 9.2)
BULK_POLL_S = 0.200     # bulk workloads: a tree walk every 20 ms would load the 2 cores itself


def log(*parts):
    print(time.strftime("%H:%M:%S"), *parts, file=sys.stderr, flush=True)


class BenchError(Exception):
    """A failure of the harness or of a tool to start (not a measured result)."""


# ----------------------------------------------------------------------------------------------
# /proc counters


def proc_cpu_seconds(pid):
    """utime + stime of a process in seconds (fields 14 and 15 of /proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_status_kib(pid, key):
    """A 'kB' line of /proc/PID/status (VmRSS, VmHWM), in KiB."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def proc_io(pid):
    """/proc/PID/io as a dict (rchar, wchar, read_bytes, write_bytes, cancelled_write_bytes)."""
    out = {}
    try:
        with open(f"/proc/{pid}/io") as f:
            for line in f:
                k, v = line.split(":")
                out[k.strip()] = int(v)
    except OSError:
        return None
    return out


def proc_children(pid):
    """Direct children of pid (scans /proc; /proc/PID/task/*/children needs a config option)."""
    kids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                data = f.read()
        except OSError:
            continue
        fields = data[data.rindex(")") + 2:].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            kids.append(int(name))
    return kids


def proc_alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except OSError:
        return False
    return data[data.rindex(")") + 2:].split()[0] not in ("Z", "X")


def lo_bytes():
    """rx+tx bytes of the loopback interface (/proc/net/dev); every loopback user counts."""
    with open("/proc/net/dev") as f:
        for line in f:
            if line.strip().startswith("lo:"):
                nums = line.split(":", 1)[1].split()
                return int(nums[0]) + int(nums[8])
    return 0


def tcp_bytes(ports):
    """Payload bytes (both directions) of the established TCP connections with an end on one of
    `ports`, from `ss -tin` (kernel tcp_info: bytes_acked + bytes_received of one end). Each
    connection counts once even when both of its ends are on the list (Syncthing dials from its
    listening port). Closed connections are gone from this count; /proc/net/dev `lo` is the
    upper bound that keeps them."""
    if not ports or shutil.which("ss") is None:
        return None
    expr = " or ".join(f"sport = :{p} or dport = :{p}" for p in ports)
    try:
        out = subprocess.run(["ss", "-tinH", "state", "established", f"( {expr} )"],
                             capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    seen, total, key = set(), 0, None
    for line in out.splitlines():
        if not line[:1].isspace():  # a socket line: [State] Recv-Q Send-Q Local Peer
            addrs = [f for f in line.split() if ":" in f]
            key = frozenset(addrs[:2]) if len(addrs) >= 2 else None
            continue
        if key is None or key in seen:
            continue
        seen.add(key)
        for m in re.finditer(r"\bbytes_(?:acked|received):(\d+)", line):
            total += int(m.group(1))
    return total


class Counters:
    """Before/after snapshot of the per-process and loopback counters of one tool."""

    def __init__(self, tool):
        self.tool = tool
        self.t = time.monotonic()
        self.pids = tool.pids()
        self.cpu = {k: proc_cpu_seconds(p) for k, p in self.pids.items()}
        self.io = {k: proc_io(p) for k, p in self.pids.items()}
        self.lo = lo_bytes()
        self.tcp = tcp_bytes(tool.wire_ports())

    def delta(self, before):
        out = {"cpu_s": {}, "io": {}}
        for k, p in self.pids.items():
            if before.pids.get(k) != p:
                out["cpu_s"][k] = None  # restarted in between: no meaningful delta
                continue
            a, b = before.cpu.get(k), self.cpu.get(k)
            out["cpu_s"][k] = round(b - a, 2) if a is not None and b is not None else None
            ia, ib = before.io.get(k), self.io.get(k)
            if ia and ib:
                out["io"][k] = {key: ib[key] - ia[key] for key in
                                ("rchar", "wchar", "write_bytes", "cancelled_write_bytes") if key in ib}
        out["lo_bytes_upper_bound"] = self.lo - before.lo
        if self.tcp is not None and before.tcp is not None:
            out["tcp_payload_bytes"] = self.tcp - before.tcp
        return out


# ----------------------------------------------------------------------------------------------
# Tools


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kill_wait(pid, sig=signal.SIGKILL, timeout=20):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while proc_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)


class Tool:
    """The pluggable interface: one class per tool. The harness only calls these methods."""

    name = "tool"
    #: Names (first path component or file name) in a synced folder that are the tool's own.
    own_names = ()

    def start(self, a_dir, b_dir):
        """Start devices A and B syncing a_dir with b_dir; return once they are connected."""
        raise NotImplementedError

    def stop(self):
        """Stop everything start() started."""
        raise NotImplementedError

    def kill_receiver(self):
        """SIGKILL the receiving device (B) at once, without any chance to clean up."""
        raise NotImplementedError

    def restart_receiver(self):
        """Start the receiving device (B) again on the same folder and state."""
        raise NotImplementedError

    def pids(self):
        """{'A': pid, 'B': pid, ...} of the processes doing the work (measured for CPU, RSS, I/O)."""
        raise NotImplementedError

    def wire_ports(self):
        """Local TCP ports whose established connections carry the sync traffic."""
        return []

    def record_health(self):
        """Facts about the server's records that say whether the devices converged cleanly
        (none for a tool without a server)."""
        return {}

    def describe(self):
        return {"tool": self.name}

    def is_own(self, rel):
        first = rel.split("/", 1)[0]
        base = rel.rsplit("/", 1)[-1]
        return any(first.startswith(n) or base.startswith(n) for n in self.own_names)


class Syncthing(Tool):
    """Two `syncthing serve` instances on 127.0.0.1, configured as sync-anchors.md section 9.2 says."""

    name = "syncthing"
    own_names = (".stfolder", ".stversions", ".syncthing.", "~syncthing~", ".stignore")
    FOLDER = "bench"

    def __init__(self, work, watcher_delay, binary="syncthing", copy_range_method="standard"):
        self.work = work
        self.delay = watcher_delay
        self.binary = binary
        self.copy_range_method = copy_range_method  # w3 option (--syncthing-copy-range-method)
        self.dev = {}  # "A"/"B" -> dict(home, dir, port, gui, key, id, proc, log)

    def describe(self):
        version = subprocess.run([self.binary, "--version"], capture_output=True, text=True).stdout.strip()
        return {"tool": self.name, "version": version, "fsWatcherDelayS": self.delay,
                "copyRangeMethod": self.copy_range_method}

    def start(self, a_dir, b_dir):
        for side, folder in (("A", a_dir), ("B", b_dir)):
            home = os.path.join(self.work, f"st-home-{side}")
            shutil.rmtree(home, ignore_errors=True)
            subprocess.run([self.binary, "generate", f"--home={home}", "--no-default-folder",
                            "--skip-port-probing"], check=True, capture_output=True)
            root = ET.parse(os.path.join(home, "config.xml")).getroot()
            dev_id = root.find("device").get("id")
            os.makedirs(os.path.join(folder, ".stfolder"), exist_ok=True)
            self.dev[side] = {"home": home, "dir": folder, "port": free_port(), "gui": free_port(),
                              "key": f"ubiquity-bench-{side.lower()}-0123456789", "id": dev_id}
        for side in ("A", "B"):
            self._write_config(side)
        for side in ("A", "B"):
            self._spawn(side)
        for side in ("A", "B"):
            self._wait_up(side)
        self._wait_connected()

    def _write_config(self, side):
        d = self.dev[side]
        path = os.path.join(d["home"], "config.xml")
        tree = ET.parse(path)
        root = tree.getroot()
        for el in root.findall("device") + root.findall("folder"):
            root.remove(el)
        for s in ("A", "B"):
            o = self.dev[s]
            dev = ET.Element("device", {"id": o["id"], "name": s, "compression": "metadata",
                                        "introducer": "false", "skipIntroductionRemovals": "false",
                                        "introducedBy": ""})
            ET.SubElement(dev, "address").text = f"tcp://127.0.0.1:{o['port']}"
            ET.SubElement(dev, "paused").text = "false"
            ET.SubElement(dev, "autoAcceptFolders").text = "false"
            root.insert(0, dev)
        folder = ET.Element("folder", {"id": self.FOLDER, "label": self.FOLDER, "path": d["dir"],
                                       "type": "sendreceive", "rescanIntervalS": "3600",
                                       "fsWatcherEnabled": "true", "fsWatcherDelayS": str(self.delay),
                                       "ignorePerms": "false", "autoNormalize": "true"})
        for s in ("A", "B"):
            ET.SubElement(folder, "device", {"id": self.dev[s]["id"], "introducedBy": ""})
        ET.SubElement(folder, "markerName").text = ".stfolder"
        ET.SubElement(folder, "copyRangeMethod").text = self.copy_range_method  # w3 option
        root.insert(0, folder)
        gui = root.find("gui")
        gui.find("address").text = f"127.0.0.1:{d['gui']}"
        gui.find("apikey").text = d["key"]
        opts = root.find("options")
        settings = {
            "listenAddress": f"tcp://127.0.0.1:{d['port']}",
            "globalAnnounceEnabled": "false", "localAnnounceEnabled": "false",
            "relaysEnabled": "false", "natEnabled": "false", "urAccepted": "-1",
            "autoUpgradeIntervalH": "0", "crashReportingEnabled": "false", "startBrowser": "false",
            # Not in section 9.2: Syncthing renices itself by default; the tools compete at equal priority.
            "setLowPriority": "false",
        }
        for k, v in settings.items():
            el = opts.find(k)
            if el is None:
                el = ET.SubElement(opts, k)
            el.text = v
        tree.write(path)

    def _spawn(self, side):
        d = self.dev[side]
        env = dict(os.environ, STNODEFAULTFOLDER="1", STNOUPGRADE="1", HOME=d["home"])
        logf = open(os.path.join(d["home"], "syncthing.log"), "ab")
        d["proc"] = subprocess.Popen([self.binary, "serve", f"--home={d['home']}", "--no-browser",
                                      "--no-upgrade"], stdout=logf, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        logf.close()
        d["child"] = None

    def _rest(self, side, path, timeout=5):
        d = self.dev[side]
        req = urllib.request.Request(f"http://127.0.0.1:{d['gui']}{path}", headers={"X-API-Key": d["key"]})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read() or b"null")

    def _wait_up(self, side, timeout=60):
        d = self.dev[side]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if d["proc"].poll() is not None:
                raise BenchError(f"syncthing {side} exited ({d['proc'].returncode}); see {d['home']}/syncthing.log")
            if d["child"] is None:
                kids = proc_children(d["proc"].pid)
                if kids:
                    d["child"] = kids[0]
            if d["child"] is not None:
                try:
                    self._rest(side, "/rest/system/ping", timeout=2)
                    return
                except OSError:
                    pass
            time.sleep(0.1)
        raise BenchError(f"syncthing {side} did not answer on 127.0.0.1:{d['gui']} in {timeout} s")

    def _wait_connected(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                conns = self._rest("A", "/rest/system/connections")["connections"]
                if conns.get(self.dev["B"]["id"], {}).get("connected"):
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise BenchError(f"syncthing A and B did not connect in {timeout} s")

    def stop(self):
        for side, d in self.dev.items():
            proc = d.get("proc")
            if proc is None:
                continue
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            if d.get("child"):
                kill_wait(d["child"], signal.SIGKILL, timeout=10)
            d["proc"] = None

    def kill_receiver(self):
        d = self.dev["B"]
        # The monitor first (else it restarts its child), then the child that does the work.
        d["proc"].kill()
        d["proc"].wait()
        if d["child"]:
            kill_wait(d["child"])

    def restart_receiver(self):
        self._spawn("B")
        self._wait_up("B")

    def pids(self):
        return {s: d["child"] for s, d in self.dev.items() if d.get("child")}

    def wire_ports(self):
        return [d["port"] for d in self.dev.values()]


class Ubiquity(Tool):
    """A local `ubiq serve`, one user, two signed-in devices each running `ubiq daemon --folder DIR`.

    Not runnable before the sync engine (issue 6) lands; the lead adapts the flags in the
    `*_command` methods if they differ."""

    name = "ubiquity"
    # (".ubiq-tmp": the new-file writer's folder of temporaries, `.ubiq-tmp-sync-new/`, and
    # safe-save temporaries; "..ubiq-tmp": the temporary of a hidden file)
    own_names = (".ubiquity", ".ubiq-tmp", "..ubiq-tmp")
    USER = "bench"
    PASSWORD = "bench-password-0123456789"

    def __init__(self, work, ubiq, serve_args=()):
        self.work = work
        self.ubiq = os.path.abspath(ubiq)
        self.serve_args = list(serve_args)
        self.server = None
        self.url = None
        self.port = None
        self.dev = {}

    def describe(self):
        return {"tool": self.name, "binary": self.ubiq}

    # Commands (one place to adapt) ------------------------------------------------------------
    def serve_command(self, data):
        return [self.ubiq, "serve", "--data", data, "--port", "0", *self.serve_args]

    def user_add_command(self, data):
        return [self.ubiq, "admin", "--data", data, "user", "add", self.USER, "--password-stdin"]

    def login_command(self, side):
        return [self.ubiq, "account", "login", "--server", self.url, "--user", self.USER,
                "--password-stdin", "--device-name", side]

    def daemon_command(self, side):
        return [self.ubiq, "daemon", "--folder", self.dev[side]["dir"]]

    # -------------------------------------------------------------------------------------------
    def _env(self, side):
        base = os.path.join(self.work, f"ubq-dev-{side}")
        env = dict(os.environ, HOME=f"{base}/home", XDG_CONFIG_HOME=f"{base}/config",
                   XDG_STATE_HOME=f"{base}/state", XDG_DATA_HOME=f"{base}/data",
                   XDG_RUNTIME_DIR=f"{base}/run")
        for k in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR"):
            os.makedirs(env[k], exist_ok=True)
        os.chmod(env["XDG_RUNTIME_DIR"], 0o700)
        return env

    def _spawn_reading(self, argv, env, logpath, pattern, timeout=60):
        """Start argv; return (proc, match) once a stdout line matches `pattern`; the rest of the
        output goes on to logpath."""
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=open(logpath + ".err", "ab"),
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        found = {}
        ready = threading.Event()

        def pump():
            with open(logpath, "ab") as out:
                for raw in proc.stdout:
                    out.write(raw)
                    out.flush()
                    if not ready.is_set():
                        m = re.search(pattern, raw.decode(errors="replace"))
                        if m:
                            found["m"] = m
                            ready.set()
            ready.set()

        threading.Thread(target=pump, daemon=True).start()
        if not ready.wait(timeout) or "m" not in found:
            proc.kill()
            raise BenchError(f"{' '.join(argv)}: no line matching {pattern!r} in {timeout} s (see {logpath}*)")
        return proc, found["m"]

    def start(self, a_dir, b_dir):
        data = os.path.join(self.work, "ubq-server")
        shutil.rmtree(data, ignore_errors=True)
        for side in ("A", "B"):
            shutil.rmtree(os.path.join(self.work, f"ubq-dev-{side}"), ignore_errors=True)
        os.makedirs(data)
        self.server, m = self._spawn_reading(self.serve_command(data), dict(os.environ),
                                             os.path.join(self.work, "ubq-server.log"),
                                             r"listening on (\S+)")
        self.url = m.group(1)
        self.port = int(re.search(r":(\d+)", self.url.split("//", 1)[-1]).group(1))
        r = subprocess.run(self.user_add_command(data), input=self.PASSWORD.encode(),
                           capture_output=True, timeout=60)
        if r.returncode != 0:
            raise BenchError(f"ubiq admin user add: {r.stderr.decode(errors='replace').strip()}")
        for side, folder in (("A", a_dir), ("B", b_dir)):
            self.dev[side] = {"dir": folder, "env": self._env(side), "proc": None}
            r = subprocess.run(self.login_command(side), input=self.PASSWORD.encode(),
                               env=self.dev[side]["env"], capture_output=True, timeout=60)
            if r.returncode != 0:
                raise BenchError(f"ubiq account login ({side}): {r.stderr.decode(errors='replace').strip()}")
        for side in ("A", "B"):
            self._spawn_daemon(side)

    def _spawn_daemon(self, side):
        d = self.dev[side]
        d["proc"], _ = self._spawn_reading(self.daemon_command(side), d["env"],
                                           os.path.join(self.work, f"ubq-daemon-{side}.log"),
                                           r"listening on")

    def stop(self):
        procs = [d["proc"] for d in self.dev.values() if d.get("proc")] + ([self.server] if self.server else [])
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for d in self.dev.values():
            d["proc"] = None
        self.server = None

    def kill_receiver(self):
        p = self.dev["B"]["proc"]
        p.kill()
        p.wait()

    def restart_receiver(self):
        self._spawn_daemon("B")

    def record_health(self):
        """The documents zone's deleted records and paths with more than one live record: a
        clean initial sync leaves none of either (two records for one path are duplicates that
        the devices had to resolve)."""
        import sqlite3
        path = os.path.join(self.work, "ubq-server", "records.sqlite")
        try:
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
            zone = "(select id from zones where name = '_ubiquityDocuments')"
            deleted = db.execute(f"select count(*) from records where deleted = 1 and zone = {zone}").fetchone()[0]
            duplicated = db.execute(f"""select count(*) from (select json_extract(fields, '$.path.value') p from records
                                        where deleted = 0 and zone = {zone} group by p having count(*) > 1)""").fetchone()[0]
            db.close()
            return {"server_deleted_records": deleted, "server_duplicate_paths": duplicated}
        except sqlite3.Error as e:
            return {"server_records_error": str(e)}

    def pids(self):
        out = {s: d["proc"].pid for s, d in self.dev.items() if d.get("proc")}
        if self.server:
            out["server"] = self.server.pid
        return out

    def wire_ports(self):
        return [self.port] if self.port else []


# ----------------------------------------------------------------------------------------------
# Trees


def payload(seed, size):
    return random.Random(seed).randbytes(size)


def write_tree(root, count, dirs, size, tag):
    """count files of `size` bytes spread over `dirs` directories; returns [(rel, bytes)]."""
    files = []
    rng = random.Random(f"{tag}-{count}-{size}")
    for i in range(count):
        rel = f"{tag}/d{i % dirs:04d}/f{i:06d}.bin"
        files.append((rel, rng.randbytes(size)))
    for d in range(min(dirs, count)):
        os.makedirs(os.path.join(root, tag, f"d{d:04d}"), exist_ok=True)
    for rel, data in files:
        with open(os.path.join(root, rel), "wb") as f:
            f.write(data)
    return files


def wait_tree(root, files, timeout, poll=BULK_POLL_S):
    """Wait until every (rel, bytes) is in root byte-exact; returns seconds waited or None on time-out.
    Cheap while waiting (existence and size, resuming at the first missing file); contents are
    compared once everything is there, and the time reported is when the scan that found
    everything began (the comparison of a large tree takes seconds and is not the tool's)."""
    t0 = time.monotonic()
    deadline = t0 + timeout
    i = 0
    while time.monotonic() < deadline:
        now = time.monotonic()
        while i < len(files):
            rel, data = files[i]
            try:
                if os.stat(os.path.join(root, rel)).st_size != len(data):
                    break
            except OSError:
                break
            i += 1
        if i == len(files):
            bad = None
            for j, (rel, data) in enumerate(files):
                try:
                    with open(os.path.join(root, rel), "rb") as f:
                        if f.read() != data:
                            bad = j
                            break
                except OSError:
                    bad = j
                    break
            if bad is None:
                return now - t0  # when the scan that found everything began
            i = bad
        time.sleep(poll)
    return None


def tree_digest(root, tool):
    """{rel: sha256} of every regular file under root that is not the tool's own."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for fn in filenames:
            full = os.path.join(dirpath, fn)
            rel = os.path.relpath(full, root)
            if tool.is_own(rel):
                continue
            h = hashlib.sha256()
            with open(full, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            out[rel] = h.hexdigest()
    return out


def count_files(root, tool):
    """Regular files under root that are not the tool's own (complete or not)."""
    n = 0
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        n += sum(1 for fn in filenames if not tool.is_own(fn if rel == "." else f"{rel}/{fn}"))
    return n


def leftovers(root, tool):
    """The tool's temporary files left in the folder (not its marker directories)."""
    n = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in (".stfolder", ".stversions") and not d.startswith(".ubiquity")]
        rel = os.path.relpath(dirpath, root)  # (the new-file writer's temporaries are in a folder)
        n += sum(1 for fn in filenames
                 if tool.is_own(fn if rel == "." else f"{rel}/{fn}") and fn not in (".stignore", ".ubiquity-sync.lock"))
    return n


def percentile(values, p):
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    s = sorted(values)
    k = max(0, min(len(s) - 1, math.ceil(p / 100 * len(s)) - 1))
    return s[k]


def wait_file(path, data, timeout, poll=POLL_S):
    t0 = time.monotonic()
    deadline = t0 + timeout
    while time.monotonic() < deadline:
        try:
            with open(path, "rb") as f:
                if f.read() == data:
                    return time.monotonic() - t0
        except OSError:
            pass
        time.sleep(poll)
    return None


def write_big(path, size, seed):
    rng = random.Random(seed)
    h = hashlib.sha256()
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, 8 << 20)
            block = rng.randbytes(n)
            h.update(block)
            f.write(block)
            left -= n
    return h.hexdigest()


def file_sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(8 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ----------------------------------------------------------------------------------------------
# Workloads: each gets a started tool and empty folders A and B, returns a metrics dict.


class Bench:
    def __init__(self, args):
        self.args = args
        q = args.quick
        self.samples = args.samples if args.samples else (5 if q else 20)
        self.many = 1_000 if q else 10_000
        self.big = (64 << 20) if q else (1 << 30)
        self.tree = 10_000 if q else 100_000
        self.idle_s = 10 if q else 30
        self.kills = 3 if q else 20
        self.rng = random.Random(args.seed)

    # W1 ---------------------------------------------------------------------------------------
    def w1_small_file(self, tool, a, b):
        lat, timeouts = [], 0
        timeout = max(30.0, 4 * self.args.watcher_delay + 10)
        for i in range(self.samples):
            data = payload(f"{self.args.seed}-w1-{i}", 512)
            rel = f"w1-{i:03d}.txt"
            with open(os.path.join(a, rel), "wb") as f:
                f.write(data)
            took = wait_file(os.path.join(b, rel), data, timeout)
            if took is None:
                timeouts += 1
            else:
                lat.append(took)
            time.sleep(self.rng.uniform(0.2, 0.7))  # not in phase with the watcher's timer
        out = {"samples": self.samples, "timeouts": timeouts, "timeout_s": timeout}
        if lat:
            out.update(p50_s=round(percentile(lat, 50), 3), p99_s=round(percentile(lat, 99), 3),
                       min_s=round(min(lat), 3), max_s=round(max(lat), 3),
                       all_s=[round(x, 3) for x in lat])
        return out

    # W2 ---------------------------------------------------------------------------------------
    def w2_many_files(self, tool, a, b):
        before = Counters(tool)
        t0 = time.monotonic()
        files = write_tree(a, self.many, 100, 1024, "w2")
        written = time.monotonic() - t0
        took = wait_tree(b, files, timeout=600)
        after = Counters(tool)
        d = after.delta(before)
        return {"files": self.many, "dirs": 100, "file_bytes": 1024, "write_s": round(written, 2),
                "all_on_b_after_first_write_s": round(written + took, 2) if took is not None else None,
                "all_on_b_after_last_write_s": round(took, 2) if took is not None else None,
                "timed_out": took is None, "cpu_s": d["cpu_s"]}

    # W3 + W4 ----------------------------------------------------------------------------------
    def w3_w4_big_file(self, tool, a, b):
        results = {}
        pa, pb = os.path.join(a, "big.bin"), os.path.join(b, "big.bin")
        t0 = time.monotonic()
        digest = write_big(pa, self.big, f"{self.args.seed}-big")
        written = time.monotonic() - t0
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            if os.path.exists(pb) and os.path.getsize(pb) == self.big and file_sha(pb) == digest:
                break
            time.sleep(0.5)
        else:
            raise BenchError(f"initial copy of the {self.big} B file not on B in 900 s")
        initial = time.monotonic() - t0 - written
        time.sleep(3 + 2 * self.args.watcher_delay)  # let both sides settle (indexes exchanged)

        # W3: one byte in the middle.
        off = self.big // 2 + self.rng.randrange(0, 4096)
        with open(pa, "rb") as f:
            f.seek(off)
            old = f.read(1)[0]
        new = bytes([(old + 1) % 256])
        before = Counters(tool)
        fd = os.open(pa, os.O_WRONLY)
        try:
            os.pwrite(fd, new, off)
        finally:
            os.close(fd)
        t0 = time.monotonic()
        took = None
        deadline = t0 + 300
        while time.monotonic() < deadline:
            try:
                with open(pb, "rb") as f:
                    f.seek(off)
                    if f.read(1) == new:
                        took = time.monotonic() - t0
                        break
            except OSError:
                pass
            time.sleep(POLL_S)
        time.sleep(2 + self.args.watcher_delay)  # let the receiver finish (bytes written, CPU)
        after = Counters(tool)
        d = after.delta(before)
        exact = file_sha(pa) == file_sha(pb)
        results["w3_one_byte_in_big_file"] = {
            "file_bytes": self.big, "offset": off, "written_s": round(written, 2),
            "initial_copy_after_write_s": round(initial, 2),
            "visible_on_b_s": round(took, 3) if took is not None else None, "timed_out": took is None,
            "byte_exact_after": exact,
            **self._wire(d)}

        # W4: rename.
        time.sleep(2 + self.args.watcher_delay)
        before = Counters(tool)
        os.rename(pa, os.path.join(a, "big-renamed.bin"))
        t0 = time.monotonic()
        took = None
        deadline = t0 + 300
        nb = os.path.join(b, "big-renamed.bin")
        while time.monotonic() < deadline:
            if os.path.exists(nb) and not os.path.exists(pb):
                took = time.monotonic() - t0
                break
            time.sleep(POLL_S)
        time.sleep(2 + self.args.watcher_delay)
        after = Counters(tool)
        d = after.delta(before)
        results["w4_rename_big_file"] = {
            "file_bytes": self.big, "renamed_on_b_s": round(took, 3) if took is not None else None,
            "timed_out": took is None,
            "byte_exact_after": os.path.exists(nb) and file_sha(nb) == file_sha(os.path.join(a, "big-renamed.bin")),
            **self._wire(d)}
        return results

    @staticmethod
    def _wire(d):
        recv = d["io"].get("B", {})
        return {"tcp_payload_bytes": d.get("tcp_payload_bytes"),
                "lo_bytes_upper_bound": d["lo_bytes_upper_bound"],
                "b_write_bytes": recv.get("write_bytes"),
                "b_cancelled_write_bytes": recv.get("cancelled_write_bytes"),
                "b_wchar": recv.get("wchar"), "b_rchar": recv.get("rchar"),
                "a_rchar": d["io"].get("A", {}).get("rchar"), "a_wchar": d["io"].get("A", {}).get("wchar"),
                "cpu_s": d["cpu_s"]}

    # W5: the tree is written before the tool starts -------------------------------------------
    def w5_prepare(self, a):
        t0 = time.monotonic()
        files = write_tree(a, self.tree, self.tree // 100, 1024, "w5")
        return files, time.monotonic() - t0

    def w5_initial_sync(self, tool, a, b, files, write_s, started_at):
        took = wait_tree(b, files, timeout=1800, poll=0.5)
        converged = time.monotonic() - started_at if took is not None else None
        time.sleep(5)  # the last index exchange
        before = Counters(tool)
        time.sleep(self.idle_s)
        after = Counters(tool)
        d = after.delta(before)
        time.sleep(self.idle_s)  # a second window: is the first one still the sync's tail?
        d2 = Counters(tool).delta(after)
        return {"files": self.tree, "dirs": self.tree // 100, "file_bytes": 1024,
                "write_s": round(write_s, 1), **tool.record_health(),
                "all_on_b_after_start_s": round(converged, 2) if converged is not None else None,
                "timed_out": converged is None,
                "idle_window_s": self.idle_s, "idle_cpu_s": d["cpu_s"],
                "idle_cpu_s_next_window": d2["cpu_s"],
                "peak_rss_mib": {k: round((proc_status_kib(p, "VmHWM") or 0) / 1024, 1)
                                 for k, p in tool.pids().items()},
                "rss_mib": {k: round((proc_status_kib(p, "VmRSS") or 0) / 1024, 1)
                            for k, p in tool.pids().items()}}

    # W6 ---------------------------------------------------------------------------------------
    # (issue 6, fault work: kill moments drawn over the window while B is incomplete)
    def w6_kill_receiver(self, tool, a, b):
        """SIGKILL B `self.kills` times at random moments while it is still pulling.

        The moments are drawn uniformly over the window in which B is incomplete. That window is
        not known in advance (each kill and restart stretches it), so before each kill the
        killer counts the files on B, estimates the up-time B still needs from its progress so
        far (files on B per second of B's up-time, the average or the fastest interval between
        two kills, whichever is larger, × 0.5 as a margin) and
        draws the remaining kills' moments uniformly over that estimate; the earliest is the next
        kill (order statistics of uniform moments, re-drawn as the estimate changes). Restart
        delays are short and random. Files on B are counted just before each kill: a kill that
        lands after B is complete is still done but reported (`late_kills`), so
        kills_before_b_complete == kills says every kill landed during the transfer."""
        kill_times, on_b_at_kill, late = [], [], []
        errors = []
        state = {"up_s": 0.0, "peak_rate": 0.0, "last_n": 0}

        def remaining_up_s(n, left):
            # B's progress comes in bursts (pages, batches, catching up after a restart): the rate
            # is the larger of the average so far and the fastest interval between two kills.
            if n > 0 and state["up_s"] > 0.2:
                rate = max(n / state["up_s"], state["peak_rate"])
                return 0.5 * (self.many - n) / rate
            # No progress seen yet: a prior of ~0.5 ms of B's up-time per file.
            return max(0.3, 0.0005 * self.many)

        def killer():
            t_start = time.monotonic()
            up_since = t_start
            for k in range(self.kills):
                left = self.kills - k
                n = count_files(b, tool)
                window = remaining_up_s(n, left)
                gap = min(self.rng.uniform(0.0, window) for _ in range(left))
                time.sleep(max(0.02, gap))
                try:
                    n = count_files(b, tool)
                    tool.kill_receiver()
                    now = time.monotonic()
                    state["up_s"] += now - up_since
                    if now - up_since >= 0.1:
                        state["peak_rate"] = max(state["peak_rate"], (n - state["last_n"]) / (now - up_since))
                    state["last_n"] = n
                    on_b_at_kill.append(n)
                    kill_times.append(round(now - t_start, 2))
                    if n >= self.many:
                        late.append(k)
                        log(f"w6: kill {k + 1} landed after B was complete ({n} files)")
                    time.sleep(self.rng.uniform(0.0, 0.3))
                    up_since = time.monotonic()  # B may work before it answers
                    tool.restart_receiver()
                except Exception as e:  # reported, not raised from a thread
                    errors.append(repr(e))
                    return

        t0 = time.monotonic()
        th = threading.Thread(target=killer)
        th.start()
        files = write_tree(a, self.many, 100, 1024, "w6")
        th.join()
        last_restart = time.monotonic()
        took = wait_tree(b, files, timeout=900)
        time.sleep(3 + self.args.watcher_delay)
        da, db = tree_digest(a, tool), tree_digest(b, tool)
        lost = sorted(set(da) - set(db))
        extra = sorted(set(db) - set(da))
        corrupt = sorted(k for k in da if k in db and da[k] != db[k])
        return {"files": self.many, "kills": len(kill_times), "kill_at_s": kill_times,
                "files_on_b_at_each_kill": on_b_at_kill,
                "kills_before_b_complete": sum(1 for n in on_b_at_kill if n < self.many),
                "late_kills": len(late),
                "b_up_s_before_last_kill": round(state["up_s"], 2),
                "errors": errors, "kills_done_after_s": round(last_restart - t0, 1),
                "converged_after_last_restart_s": round(took, 2) if took is not None else None,
                "timed_out": took is None, "files_lost": len(lost), "files_corrupted": len(corrupt),
                "files_extra_on_b": len(extra), "tool_temp_files_left_on_b": leftovers(b, tool),
                "examples": (lost + corrupt + extra)[:5]}
    # (end of the w6 fault work)


WORKLOADS = {
    "1": "w1_small_file",
    "2": "w2_many_files",
    "3": "w3_one_byte_in_big_file",
    "4": "w4_rename_big_file",
    "5": "w5_initial_sync",
    "6": "w6_kill_receiver",
}


def make_tool(name, args, work):
    if name == "syncthing":
        return Syncthing(work, args.watcher_delay, copy_range_method=args.syncthing_copy_range_method)
    if name == "ubiquity":
        return Ubiquity(work, args.ubiq, shlex.split(args.ubiq_serve_args))
    raise BenchError(f"--tools: unknown tool {name!r}; expected syncthing or ubiquity")


def fresh_dirs(work):
    a, b = os.path.join(work, "A"), os.path.join(work, "B")
    for d in (a, b):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    return a, b


def emit(results, tool, workload, params, metrics):
    obj = {"tool": tool.name, "workload": workload, **params, **metrics}
    results.append(obj)
    print(json.dumps(obj, sort_keys=False), flush=True)


def run(args):
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    wanted = [w.strip() for w in args.workloads.split(",") if w.strip()]
    for w in wanted:
        if w not in WORKLOADS:
            raise BenchError(f"--workloads: unknown workload {w!r}; expected numbers 1 to 6")
    for t in tools:
        if t not in ("syncthing", "ubiquity"):
            raise BenchError(f"--tools: unknown tool {t!r}; expected syncthing or ubiquity")
    if not tools or not wanted:
        raise BenchError("--tools and --workloads: expected at least one each")
    if "syncthing" in tools:
        setup()
    if "ubiquity" in tools and not os.access(args.ubiq, os.X_OK):
        raise BenchError(f"--ubiq {args.ubiq}: not an executable file (build with swift build -c release)")
    if not os.path.isabs(args.base) or args.base.startswith("/tmp"):
        raise BenchError(f"--base {args.base}: expected an absolute path outside /tmp (e.g. /var/tmp/...)")
    os.makedirs(args.base, exist_ok=True)
    lock = open(os.path.join(args.base, ".lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        raise BenchError(f"--base {args.base}: another bench-sync.py run is using it; give another --base")
    bench = Bench(args)
    results = []
    for name in tools:
        work = os.path.join(args.base, name)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        tool = make_tool(name, args, work)
        params = {"quick": args.quick, "watcher_delay_s": args.watcher_delay if name == "syncthing" else None,
                  **{k: v for k, v in tool.describe().items() if k != "tool"}}

        def session(body, prepare=None):
            a, b = fresh_dirs(work)
            extra = prepare(a) if prepare else ()
            meta = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "loadavg": open("/proc/loadavg").read().split()[:3]}
            started_at = time.monotonic()
            try:
                tool.start(a, b)
                log(f"{tool.name}: started and connected in {time.monotonic() - started_at:.1f} s")
                return meta, body(tool, a, b, *extra, started_at) if prepare else body(tool, a, b)
            finally:
                tool.stop()

        for w in wanted:
            if w == "4" and "3" in wanted:
                continue  # measured in the same session as 3
            label = WORKLOADS[w]
            log(f"{name}: workload {w} ({label})")
            try:
                if w == "1":
                    meta, m = session(bench.w1_small_file)
                    emit(results, tool, label, {**params, **meta}, m)
                elif w == "2":
                    meta, m = session(bench.w2_many_files)
                    emit(results, tool, label, {**params, **meta}, m)
                elif w in ("3", "4"):
                    meta, m = session(bench.w3_w4_big_file)
                    for key in ("w3_one_byte_in_big_file", "w4_rename_big_file"):
                        if key[1] in wanted:
                            emit(results, tool, key, {**params, **meta}, m[key])
                elif w == "5":
                    meta, m = session(bench.w5_initial_sync, prepare=bench.w5_prepare)
                    emit(results, tool, label, {**params, **meta}, m)
                elif w == "6":
                    meta, m = session(bench.w6_kill_receiver)
                    emit(results, tool, label, {**params, **meta}, m)
            except (BenchError, OSError, subprocess.SubprocessError) as e:
                log(f"{name}: workload {w} failed: {e}")
                emit(results, tool, label, params, {"error": str(e)})
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(results))
    return results


def fmt(key, v):
    if v is None:
        return "—"
    if isinstance(v, dict):
        return ", ".join(f"{k} {fmt(key, x)}" for k, x in v.items())
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, int) and not isinstance(v, bool) and (key.endswith("bytes") or key.endswith("bound")):
        return f"{v:,} B ({v / (1 << 20):.2f} MiB)"
    return str(v)


COLUMNS = {
    "w1_small_file": ["samples", "p50_s", "p99_s", "min_s", "max_s", "timeouts"],
    "w2_many_files": ["files", "write_s", "all_on_b_after_first_write_s", "all_on_b_after_last_write_s", "cpu_s"],
    "w3_one_byte_in_big_file": ["file_bytes", "visible_on_b_s", "tcp_payload_bytes", "lo_bytes_upper_bound",
                                "b_write_bytes", "cpu_s", "byte_exact_after"],
    "w4_rename_big_file": ["file_bytes", "renamed_on_b_s", "tcp_payload_bytes", "lo_bytes_upper_bound",
                           "b_write_bytes", "cpu_s", "byte_exact_after"],
    "w5_initial_sync": ["files", "all_on_b_after_start_s", "idle_window_s", "idle_cpu_s", "idle_cpu_s_next_window",
                        "peak_rss_mib", "server_deleted_records", "server_duplicate_paths"],
    "w6_kill_receiver": ["files", "kills", "kills_before_b_complete", "files_lost", "files_corrupted", "files_extra_on_b",
                         "tool_temp_files_left_on_b", "converged_after_last_restart_s"],
}


def markdown(results):
    out = []
    for wl, cols in COLUMNS.items():
        rows = [r for r in results if r["workload"] == wl]
        if not rows:
            continue
        cols = ["tool", "watcher_delay_s"] + cols + (["error"] if any("error" in r for r in rows) else [])
        out.append(f"### {wl}\n")
        out.append("| " + " | ".join(cols) + " |")
        out.append("|" + "---|" * len(cols))
        for r in rows:
            out.append("| " + " | ".join(fmt(c, r.get(c)) for c in cols) + " |")
        out.append("")
    return "\n".join(out) + "\n"


def setup():
    """Install Syncthing from Debian's package if it is missing (idempotent)."""
    if shutil.which("syncthing"):
        return
    log("syncthing missing: apt-get install -y syncthing")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    r = subprocess.run(["apt-get", "install", "-y", "syncthing"], env=env)
    if r.returncode != 0:
        subprocess.run(["apt-get", "update"], env=env)
        r = subprocess.run(["apt-get", "install", "-y", "syncthing"], env=env)
    if r.returncode != 0 or not shutil.which("syncthing"):
        raise BenchError("apt-get install -y syncthing failed (run as root, with the Debian archive reachable)")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", nargs="?", default="run", choices=["run", "setup"],
                   help="run the workloads (default) or only install what the tools need")
    p.add_argument("--tools", default="syncthing", help="comma-separated: syncthing, ubiquity (default syncthing)")
    p.add_argument("--workloads", default="1,2,3,4,5,6", help="comma-separated workload numbers (default all)")
    p.add_argument("--quick", action="store_true", help="small workloads: the whole run in under 5 minutes")
    p.add_argument("--samples", type=int, default=0, help="workload 1 samples (default 20; 5 with --quick)")
    p.add_argument("--watcher-delay", type=int, default=10,
                   help="Syncthing fsWatcherDelayS (default 10, Syncthing's default; 1 is its minimum)")
    p.add_argument("--ubiq", default=".build/release/ubiq", help="the ubiq binary (default .build/release/ubiq)")
    p.add_argument("--ubiq-serve-args", default="",
                   help="extra arguments for ubiq serve, e.g. '--rate-limit 0 --log-level warning'")
    p.add_argument("--base", default="/var/tmp/ubiquity-bench-sync", help="scratch directory (not under /tmp)")
    p.add_argument("--seed", type=int, default=6, help="random seed (contents, offsets, kill moments)")
    p.add_argument("--markdown", help="also write the figures as Markdown tables to this file")
    # w3 option: how Syncthing copies the unchanged blocks of an edited file (1.19: standard,
    # copy_file_range, ioctl, sendfile, duplicate_extents, all).
    p.add_argument("--syncthing-copy-range-method", default="standard",
                   help="Syncthing's folder option copyRangeMethod (default standard, Syncthing's own default)")
    p.add_argument("--keep", action="store_true", help="keep the scratch folders and logs")
    args = p.parse_args(argv)
    if args.samples < 0:
        p.error(f"--samples {args.samples}: expected a positive number")
    if args.watcher_delay < 1:
        p.error(f"--watcher-delay {args.watcher_delay}: expected whole seconds >= 1 (Syncthing 1.19's minimum)")
    try:
        if args.command == "setup":
            setup()
            return 0
        run(args)
    except BenchError as e:
        print(f"bench-sync: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
