#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`ubiq daemon --mount` (the synced folder served through FUSE) against the disk under it and
an rclone mount: issue 23's figures.

  ls        `ls -lR` of --files files (100 per folder, --file-bytes each): warm, the first
            listing after a fresh mount (daemon / rclone mount restarted), and cold (fresh
            mount and the kernel's caches dropped, when /proc/sys/vm/drop_caches is writable).
  firstbyte open() + read(1 byte) of a --size-mib file that is not here: evicted
            (`ubiq evict`) for ubiq, not in the VFS cache (fresh mount, empty cache dir) for
            rclone; the rest of the file is read after it (the time to the last byte too).
            Then, the file not here again, open() + pread() of its last 64 KiB.
  read      sequential read with 1 MiB buffers of a downloaded --size-mib file: warm (page
            cache) and cold (caches dropped).
  write     sequential write of --size-mib (1 MiB writes, fsync at the end) to a new file; the
            daemon's upload afterwards is waited for but not timed (reported apart).
  untar     `tar -xf` of a tarball of --untar-files files (a real source tree: the package
            checkouts' sources, else generated text files). Also into the FUSE floor: libfuse's
            own `passthrough_ll` example (C, Debian's libfuse3-dev examples, default options)
            over a folder on the same disk: what any FUSE file system pays on this kernel.
  memory    the daemon's RSS (VmRSS) before and after, and its peak (VmHWM, reset through
            /proc/PID/clear_refs) during: writing + uploading, downloading (open of the evicted
            file) + reading, and reading the downloaded file; for a --small-size-mib and a
            --size-mib file.

The ubiq "device" is a set of XDG folders under --base (never the real $HOME) running
`ubiq daemon --local-server --mount`; the disk baseline is a plain folder on the same file
system (--base/disk); rclone is `rclone serve webdav` of a folder under --base and
`rclone mount :webdav: --vfs-cache-mode full` of it. Every measurement runs --runs times
(median reported; targets alternate within a run); ratios are of the medians of this run.

    swift build -c release --product ubiq
    Benchmarks/mount/bench-mount.py --ubiq .build/release/ubiq --base /var/tmp/bench-mount \\
        [--files 10000] [--size-mib 1024] [--untar-files 5000] [--runs 3] \\
        [--only ls,firstbyte,read,write,untar,memory] [--json out.json] [--keep]

Markdown on stdout, progress on stderr, logs (the daemon's, rclone's) in --base/logs. Everything
started is stopped and unmounted at the end, on an error or an interrupt too (try/finally,
atexit, SIGTERM/SIGINT/SIGHUP handlers); a later run also clears what a killed run left under
--base (stale mounts, its recorded processes). Python 3 standard library only; needs `rclone`,
`fusermount3`, `tar`, `ls`; root only for dropping caches (cold figures are skipped otherwise).
"""

import argparse
import atexit
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
MiB = 1 << 20
PHASES = ["ls", "firstbyte", "read", "write", "untar", "memory"]


class BenchError(Exception):
    """A failure reported as one clear message."""


def log(*args):
    print(f"bench-mount [{time.strftime('%H:%M:%S')}]:", *args, file=sys.stderr, flush=True)


# MARK: - Child operations (timed in a process of their own, so a hang is a timeout, not ours)

def child_main(argv):
    op = argv[0]
    if op == "create-tree":
        root, folders, per_folder, size = argv[1], int(argv[2]), int(argv[3]), int(argv[4])
        payload = (b"0123456789abcdef" * (size // 16 + 1))[:size]
        start = time.perf_counter()
        os.makedirs(root, exist_ok=True)
        for f in range(folders):
            d = os.path.join(root, "d%03d" % f)
            os.mkdir(d)
            for i in range(per_folder):
                with open(os.path.join(d, "f%04d.txt" % i), "wb") as out:
                    out.write(payload)
        result = {"seconds": time.perf_counter() - start}
    elif op == "firstbyte":
        path = argv[1]
        size = os.stat(path).st_size  # untimed: the name is looked up, its size shown
        buffer = bytearray(MiB)
        start = time.perf_counter()
        fd = os.open(path, os.O_RDONLY)
        first = os.read(fd, 1)
        first_at = time.perf_counter()
        total = len(first)
        while True:
            n = os.readv(fd, [buffer])
            if n == 0:
                break
            total += n
        end = time.perf_counter()
        os.close(fd)
        result = {"seconds": first_at - start, "all": end - start, "bytes": total, "size": size, "first": len(first)}
    elif op == "lastbytes":
        path = argv[1]
        size = os.stat(path).st_size  # untimed, as for firstbyte
        count = min(size, 64 * 1024)
        start = time.perf_counter()
        fd = os.open(path, os.O_RDONLY)
        data = os.pread(fd, count, size - count)
        end = time.perf_counter()
        os.close(fd)
        result = {"seconds": end - start, "bytes": len(data), "size": size}
    elif op == "read":
        path = argv[1]
        buffer = bytearray(MiB)
        start = time.perf_counter()
        fd = os.open(path, os.O_RDONLY)
        total = 0
        while True:
            n = os.readv(fd, [buffer])
            if n == 0:
                break
            total += n
        os.close(fd)
        result = {"seconds": time.perf_counter() - start, "bytes": total}
    elif op == "write":
        path, source = argv[1], argv[2]
        with open(source, "rb") as f:
            data = memoryview(f.read())  # in memory before the clock starts
        start = time.perf_counter()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        offset = 0
        while offset < len(data):
            offset += os.write(fd, data[offset:offset + MiB])
        written = time.perf_counter()
        os.fsync(fd)
        os.close(fd)
        result = {"seconds": time.perf_counter() - start, "before_fsync": written - start, "bytes": offset}
    else:
        raise SystemExit(f"unknown child operation {op}")
    print(json.dumps(result))


# MARK: - Processes and mounts, cleaned up whatever happens

PROCESSES = []   # (label, Popen)
MOUNTS = []      # mount points we made
PID_FILE = None  # --base/.bench-mount-pids: what a killed run left


def note_pids():
    if PID_FILE:
        try:
            PID_FILE.write_text("".join(f"{p.pid}\n" for _, p in PROCESSES if p.poll() is None))
        except OSError:
            pass


def spawn(label, command, log_path, env=None):
    logf = open(log_path, "ab")
    logf.write(f"\n### {time.strftime('%H:%M:%S')} {' '.join(map(str, command))}\n".encode())
    logf.flush()
    process = subprocess.Popen([str(c) for c in command], stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               env=env, start_new_session=True)
    logf.close()
    PROCESSES.append((label, process))
    note_pids()
    return process


def stop_process(process, label, grace=60):
    """SIGTERM, then SIGKILL after `grace` seconds; True when it ended by itself."""
    clean = True
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            log(f"{label} (pid {process.pid}) did not stop within {grace} s of SIGTERM: killed")
            clean = False
            process.kill()
            process.wait(30)
    for entry in list(PROCESSES):
        if entry[1] is process:
            PROCESSES.remove(entry)
    note_pids()
    return clean


def unescape(field):
    out, i = bytearray(), 0
    raw = field.encode()
    while i < len(raw):
        if raw[i:i + 1] == b"\\" and len(raw[i + 1:i + 4]) == 3 and raw[i + 1:i + 4].isdigit():
            out.append(int(raw[i + 1:i + 4], 8))
            i += 4
        else:
            out.append(raw[i])
            i += 1
    return out.decode(errors="replace")


def mounts():
    """{mount point: type} from /proc/self/mountinfo (the last mount at a point wins)."""
    found = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split(" ")
            if "-" not in fields:
                continue
            dash = fields.index("-")
            found[unescape(fields[4])] = fields[dash + 1]
    return found


def detach(path):
    """Lazily unmounts `path` while something is mounted there."""
    for command in (["fusermount3", "-u", "-z", path], ["umount", "-l", path]):
        if str(path) not in mounts():
            return True
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if str(path) in mounts():
        log(f"could not unmount {path}")
        return False
    return True


def cleanup():
    for label, process in reversed(list(PROCESSES)):
        try:
            stop_process(process, label, grace=30)
        except Exception as error:  # keep cleaning
            log(f"stopping {label}: {error}")
    for path in reversed(list(MOUNTS)):
        try:
            detach(path)
        except Exception as error:
            log(f"unmounting {path}: {error}")


def on_signal(number, _frame):
    raise KeyboardInterrupt(f"signal {number}")


def clear_leftovers(base):
    """What a killed earlier run left under `base`: its processes (by recorded pid, when their
    command line still names `base`) and its mounts."""
    pid_file = base / ".bench-mount-pids"
    if pid_file.exists():
        for line in pid_file.read_text().split():
            try:
                pid = int(line)
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                environ = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
            except (ValueError, OSError):
                continue
            if str(base) in cmdline or f"HOME={base}/" in environ:  # the daemon's names it in its $HOME
                log(f"stopping pid {pid} left by an earlier run: {cmdline[:120]}")
                os.kill(pid, signal.SIGTERM)
                for _ in range(100):
                    if not Path(f"/proc/{pid}").exists():
                        break
                    time.sleep(0.1)
                else:
                    os.kill(pid, signal.SIGKILL)
    for point in sorted(mounts(), key=len, reverse=True):
        if point == str(base) or point.startswith(str(base) + "/"):
            log(f"unmounting {point} left by an earlier run")
            detach(point)


# MARK: - Helpers

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def can_drop_caches():
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")
    time.sleep(0.5)


def run_child(op, *args, timeout):
    command = [sys.executable, str(Path(__file__).resolve()), "__child", op] + [str(a) for a in args]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BenchError(f"timed out after {timeout} s (a hang?): {op} {' '.join(map(str, args))}")
    if result.returncode != 0:
        raise BenchError(f"{op} {' '.join(map(str, args))} failed ({result.returncode}): {result.stderr.strip()[-1500:]}")
    return json.loads(result.stdout)


def timed_command(command, timeout, cwd=None):
    start = time.perf_counter()
    try:
        result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=timeout,
                                cwd=cwd, env=dict(os.environ, LC_ALL="C"))
    except subprocess.TimeoutExpired:
        raise BenchError(f"timed out after {timeout} s (a hang?): {' '.join(map(str, command))}")
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise BenchError(f"failed ({result.returncode}): {' '.join(map(str, command))}: {result.stderr.strip()[-1500:]}")
    return seconds


def ls_count(path, timeout):
    """Files listed by `ls -lR path` (lines starting with '-'): the listing is complete."""
    result = subprocess.run(["ls", "-lR", "--color=never", str(path)], capture_output=True, text=True, timeout=timeout,
                            env=dict(os.environ, LC_ALL="C"))
    if result.returncode != 0:
        raise BenchError(f"ls -lR {path} failed: {result.stderr.strip()[-1000:]}")
    return sum(1 for line in result.stdout.splitlines() if line.startswith("-"))


def count_files(path):
    return sum(len(files) for _, _, files in os.walk(path))


def make_random_file(path, size):
    """`size` incompressible bytes, unique per call (AES-CTR with a random key via openssl when
    there is one, else os.urandom)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as out:
        if shutil.which("openssl"):
            key, iv = os.urandom(32).hex(), os.urandom(16).hex()
            p = subprocess.Popen(["openssl", "enc", "-aes-256-ctr", "-nosalt", "-K", key, "-iv", iv, "-in", "/dev/zero"],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            left = size
            while left:
                chunk = p.stdout.read(min(left, 4 * MiB))
                if not chunk:
                    raise BenchError("openssl stopped early")
                out.write(chunk)
                left -= len(chunk)
            p.kill()
            p.wait()
        else:
            left = size
            while left:
                n = min(left, 4 * MiB)
                out.write(os.urandom(n))
                left -= n


def median(values):
    return statistics.median(values) if values else None


def rss_kib(pid):
    values = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(value.split()[0])
    return values


# MARK: - The ubiq device

class Ubiq:
    def __init__(self, binary, root, logs, fetch_timeout, sync_timeout):
        self.binary = str(binary)
        self.root = root
        self.logs = logs
        self.fetch_timeout = fetch_timeout
        self.sync_timeout = sync_timeout
        home = root / "home"
        (root / "run").mkdir(parents=True, exist_ok=True)
        home.mkdir(parents=True, exist_ok=True)
        os.chmod(root / "run", 0o700)
        env = {k: v for k, v in os.environ.items() if not k.startswith("UBIQUITY_") and not k.startswith("XDG_")}
        env.update(HOME=str(home), XDG_RUNTIME_DIR=str(root / "run"), XDG_STATE_HOME=str(home / ".local/state"),
                   XDG_DATA_HOME=str(home / ".local/share"), XDG_CONFIG_HOME=str(home / ".config"),
                   XDG_CACHE_HOME=str(home / ".cache"), NO_COLOR="1")
        self.env = env
        self.folder = home / "Ubiquity"
        self.port = free_port()
        self.process = None
        self.starts = 0
        self.start_seconds = []
        self.unclean_stops = 0

    def log_path(self):
        return self.logs / "ubiq-daemon.log"

    def start(self):
        self.starts += 1
        started = time.perf_counter()
        offset = self.log_path().stat().st_size if self.log_path().exists() else 0
        self.process = spawn("ubiq daemon", [self.binary, "daemon", "--local-server", "--local-server-port", self.port,
                                             "--mount", "--mount-fetch-timeout", self.fetch_timeout], self.log_path(), env=self.env)
        MOUNTS.append(str(self.folder)) if str(self.folder) not in MOUNTS else None
        deadline = time.time() + 180
        while True:
            text = self.log_path().read_bytes()[offset:].decode(errors="replace")
            if ("coordination service listening on" in text and "through FUSE" in text
                    and mounts().get(str(self.folder)) == "fuse.ubiquity"):
                break
            if self.process.poll() is not None:
                raise BenchError(f"ubiq daemon exited ({self.process.returncode}) while starting:\n{text[-3000:]}")
            if time.time() > deadline:
                raise BenchError(f"ubiq daemon not ready (mounted) after 180 s:\n{text[-3000:]}")
            time.sleep(0.05)
        self.start_seconds.append(time.perf_counter() - started)

    def stop(self):
        if self.process is None:
            return
        if not stop_process(self.process, "ubiq daemon"):
            self.unclean_stops += 1
        self.process = None
        if str(self.folder) in mounts():
            log(f"the daemon ended but {self.folder} is still mounted ({mounts()[str(self.folder)]}): unmounting")
            self.unclean_stops += 1
            detach(str(self.folder))

    def restart(self):
        self.stop()
        self.start()

    def check_alive(self):
        if self.process is None or self.process.poll() is not None:
            raise BenchError(f"ubiq daemon is gone (exit {self.process.returncode if self.process else None}); see {self.log_path()}")

    def cli(self, *args, check=True, timeout=120):
        command = [self.binary] + [str(a) for a in args]
        try:
            result = subprocess.run(command, capture_output=True, text=True, env=self.env, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise BenchError(f"timed out after {timeout} s: ubiq {' '.join(map(str, args))}")
        if check and result.returncode != 0:
            raise BenchError(f"ubiq {' '.join(map(str, args))} failed ({result.returncode}): {result.stderr.strip()[-1500:]}")
        return result

    def status(self, path):
        return json.loads(self.cli("status", path, "--json").stdout)

    def wait_uploaded(self, path, what=None):
        """Seconds until `ubiq status PATH` says uploaded."""
        start = time.perf_counter()
        deadline = time.time() + self.sync_timeout
        last = None
        while time.time() < deadline:
            self.check_alive()
            last = self.status(path)
            if last.get("sync") == "uploaded" and not last.get("isUploading"):
                return time.perf_counter() - start
            if last.get("uploadError"):
                log(f"upload error for {path}: {last.get('uploadError')}")
            time.sleep(0.25)
        raise BenchError(f"{what or path} not uploaded after {self.sync_timeout} s: {json.dumps(last)[:800]}")

    def wait_folder_uploaded(self, path, files):
        """Seconds until the index counts at least `files` items of the folder uploaded and none
        moving (twice in a row)."""
        start = time.perf_counter()
        deadline = time.time() + self.sync_timeout
        last, calm = None, 0
        while time.time() < deadline:
            self.check_alive()
            last = self.status(path).get("items") or {}
            if (last.get("uploaded", 0) >= files and last.get("uploading", 1) == 0 and last.get("notUploaded", 1) == 0
                    and last.get("downloading", 1) == 0):
                calm += 1
                if calm >= 2:
                    return time.perf_counter() - start
            else:
                calm = 0
            time.sleep(0.5)
        raise BenchError(f"{path}: {files} files not uploaded after {self.sync_timeout} s: {json.dumps(last)[:800]}")

    def evict(self, path):
        deadline = time.time() + 60
        while True:
            result = self.cli("evict", path, check=False)
            if result.returncode == 0:
                break
            if time.time() > deadline:
                raise BenchError(f"ubiq evict {path} kept failing: {result.stderr.strip()[-800:]}")
            time.sleep(0.5)
        state = self.status(path)
        if state.get("downloadingStatus") != "notDownloaded":
            raise BenchError(f"evicted {path} but status says {state.get('downloadingStatus')}")
        st = os.stat(path)
        if st.st_size != state.get("size"):
            raise BenchError(f"the mount shows evicted {path} with size {st.st_size}, status says {state.get('size')}")

    def rss(self):
        return rss_kib(self.process.pid)

    def cpu_seconds(self):
        """User + system CPU time the daemon has used."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def reset_peak(self):
        try:
            with open(f"/proc/{self.process.pid}/clear_refs", "w") as f:
                f.write("5\n")
            return True
        except OSError:
            return False

    def log_problems(self):
        if not self.log_path().exists():
            return []
        lines = self.log_path().read_text(errors="replace").splitlines()
        return [line for line in lines if any(f" {level} " in line for level in ("warning", "error", "critical"))]


# MARK: - The rclone peer

class Rclone:
    def __init__(self, base, logs):
        self.remote = base / "rclone-remote"
        self.mount_point = base / "rclone-mnt"
        self.cache = base / "rclone-cache"
        self.logs = logs
        for d in (self.remote, self.mount_point, self.cache):
            d.mkdir(parents=True, exist_ok=True)
        config = base / "rclone.conf"
        config.write_text("")
        self.env = dict(os.environ, RCLONE_CONFIG=str(config))
        self.port = free_port()
        self.server = None
        self.process = None

    def start_server(self):
        self.server = spawn("rclone serve", ["rclone", "serve", "webdav", self.remote, "--addr", f"127.0.0.1:{self.port}"],
                            self.logs / "rclone-serve.log", env=self.env)
        deadline = time.time() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self.server.poll() is not None or time.time() > deadline:
                    raise BenchError(f"rclone serve webdav did not start; see {self.logs / 'rclone-serve.log'}")
                time.sleep(0.1)

    def mount(self, clear_cache=False):
        if clear_cache:
            shutil.rmtree(self.cache, ignore_errors=True)
            self.cache.mkdir()
        self.process = spawn("rclone mount", ["rclone", "mount", ":webdav:", self.mount_point,
                                              "--webdav-url", f"http://127.0.0.1:{self.port}",
                                              "--vfs-cache-mode", "full", "--cache-dir", self.cache],
                             self.logs / "rclone-mount.log", env=self.env)
        MOUNTS.append(str(self.mount_point)) if str(self.mount_point) not in MOUNTS else None
        deadline = time.time() + 60
        while mounts().get(str(self.mount_point)) != "fuse.rclone":
            if self.process.poll() is not None or time.time() > deadline:
                raise BenchError(f"rclone mount did not mount; see {self.logs / 'rclone-mount.log'}")
            time.sleep(0.05)

    def unmount(self):
        if self.process is not None:
            stop_process(self.process, "rclone mount")
            self.process = None
        detach(str(self.mount_point))

    def remount(self, clear_cache=False, remote_changed=False):
        """A fresh mount; `remote_changed`: files were put in the remote folder behind the
        server's back, so the server (which caches listings too) is restarted first."""
        self.unmount()
        if remote_changed:
            stop_process(self.server, "rclone serve")
            self.start_server()
        self.mount(clear_cache)

    def wait_remote_size(self, name, size, timeout):
        """Seconds until the remote holds `name` with `size` bytes (rclone's write-back done)."""
        start = time.perf_counter()
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if (self.remote / name).stat().st_size == size and not list(self.remote.glob(f".{name}*partial*")):
                    # and rclone has no upload in flight for it
                    return time.perf_counter() - start
            except OSError:
                pass
            time.sleep(0.25)
        raise BenchError(f"rclone did not upload {name} ({size} bytes) within {timeout} s")

    def wait_remote_count(self, folder, files, timeout):
        start = time.perf_counter()
        deadline = time.time() + timeout
        while time.time() < deadline:
            if (self.remote / folder).is_dir() and count_files(self.remote / folder) >= files:
                return time.perf_counter() - start
            time.sleep(0.5)
        raise BenchError(f"rclone did not upload {files} files of {folder} within {timeout} s")


# MARK: - The FUSE floor

class FuseFloor:
    """libfuse's `passthrough_ll` example, built from Debian's libfuse3-dev examples and mounted
    over a folder of --base: the cost of FUSE itself, with no work behind the requests."""

    SOURCE = Path("/usr/share/doc/libfuse3-dev/examples")

    def __init__(self, base, logs):
        self.root = base / "fuse-floor"
        self.source = self.root / "src"
        self.mount_point = self.root / "mnt"
        self.binary = self.root / "passthrough_ll"
        self.logs = logs
        self.process = None

    def available(self):
        return (self.SOURCE / "passthrough_ll.c").exists() and shutil.which("cc") and shutil.which("pkg-config")

    def mount(self):
        for d in (self.source, self.mount_point):
            d.mkdir(parents=True, exist_ok=True)
        if not self.binary.exists():
            flags = subprocess.run(["pkg-config", "fuse3", "--cflags", "--libs"], capture_output=True, text=True, check=True).stdout.split()
            for name in ("passthrough_ll.c", "passthrough_helpers.h"):
                shutil.copyfile(self.SOURCE / name, self.root / name)
            subprocess.run(["cc", "-O2", str(self.root / "passthrough_ll.c"), "-o", str(self.binary)] + flags, check=True,
                           capture_output=True)
        self.process = spawn("passthrough_ll", [self.binary, "-f", "-o", f"source={self.source}", self.mount_point],
                             self.logs / "passthrough_ll.log")
        MOUNTS.append(str(self.mount_point)) if str(self.mount_point) not in MOUNTS else None
        deadline = time.time() + 30
        while mounts().get(str(self.mount_point)) is None or not mounts()[str(self.mount_point)].startswith("fuse"):
            if self.process.poll() is not None or time.time() > deadline:
                raise BenchError(f"passthrough_ll did not mount; see {self.logs / 'passthrough_ll.log'}")
            time.sleep(0.05)

    def unmount(self):
        if self.process is not None:
            detach(str(self.mount_point))
            stop_process(self.process, "passthrough_ll")
            self.process = None


# MARK: - The benchmark

class Bench:
    def __init__(self, args):
        self.args = args
        self.base = Path(args.base).resolve()
        self.logs = self.base / "logs"
        self.src = self.base / "src"
        self.disk = self.base / "disk"
        self.runs = args.runs
        self.size = args.size_mib * MiB
        self.small = (args.small_size_mib if args.small_size_mib < args.size_mib else max(1, args.size_mib // 4)) * MiB
        self.results = {}
        self.info = {}
        self.notes = []
        self.drop = False
        self.ubiq = None
        self.rclone = None

    # set-up

    def prepare(self):
        global PID_FILE
        self.base.mkdir(parents=True, exist_ok=True)
        clear_leftovers(self.base)
        PID_FILE = self.base / ".bench-mount-pids"
        for name in ("ubiq-a", "disk", "rclone-remote", "rclone-mnt", "rclone-cache", "src", "logs", "fuse-floor"):
            path = self.base / name
            if str(path) in mounts():
                raise BenchError(f"{path} is still a mount point")
            shutil.rmtree(path, ignore_errors=True)
        for d in (self.logs, self.src, self.disk):
            d.mkdir(parents=True)
        self.drop = can_drop_caches()
        if not self.drop:
            self.notes.append("/proc/sys/vm/drop_caches is not writable here: no cold figures")
        total, used, free = shutil.disk_usage(self.base)
        need = 6 * self.size + 2 * self.small + 64 * MiB
        self.info["disk_free_gib"] = round(free / (1 << 30), 1)
        if free < need:
            raise BenchError(f"{self.base} has {free / (1 << 30):.1f} GiB free; this run needs about {need / (1 << 30):.1f} GiB")
        fs = subprocess.run(["stat", "-f", "-c", "%T", str(self.base)], capture_output=True, text=True).stdout.strip()
        self.info["base_fs"] = fs
        if fs == "tmpfs":
            self.notes.append(f"--base {self.base} is on tmpfs: the disk figures are memory figures")
        self.ubiq = Ubiq(Path(self.args.ubiq).resolve(), self.base / "ubiq-a", self.logs, self.args.fetch_timeout, self.args.sync_timeout)
        self.rclone = Rclone(self.base, self.logs)
        log(f"starting ubiq daemon --mount ({self.args.ubiq}) and rclone (webdav on port {self.rclone.port})")
        self.ubiq.start()
        log(f"ubiq mounted {self.ubiq.folder} in {self.ubiq.start_seconds[-1]:.2f} s")
        self.rclone.start_server()
        self.rclone.mount(clear_cache=True)
        self.info["daemon_rss_start_kib"] = self.ubiq.rss()["VmRSS"]

    def record(self, key, target, value):
        self.results.setdefault(key, {}).setdefault(target, []).append(value)

    def settle(self):
        time.sleep(self.args.settle)

    # ls -lR

    def phase_ls(self):
        files = self.args.files
        per = 100 if files >= 100 else files
        folders = max(1, files // per)
        files = folders * per
        self.info["ls_files"] = files
        trees = {"disk": self.disk / "tree", "ubiq": self.ubiq.folder / "tree", "rclone": self.rclone.mount_point / "tree"}
        log(f"ls: creating {folders} folders of {per} files of {self.args.file_bytes} bytes on disk, in the mount, in rclone's remote")
        for target, root in (("disk", trees["disk"]), ("ubiq", trees["ubiq"]), ("rclone-remote", self.rclone.remote / "tree")):
            result = run_child("create-tree", root, folders, per, self.args.file_bytes, timeout=self.args.op_timeout)
            self.info[f"ls_create_seconds_{target}"] = result["seconds"]
            log(f"  created on {target} in {result['seconds']:.2f} s")
        self.rclone.remount(remote_changed=True)  # sees the remote's new tree
        upload = self.ubiq.wait_folder_uploaded(trees["ubiq"], files)
        self.info["ls_tree_upload_seconds_after_create"] = upload
        log(f"  ubiq uploaded the tree {upload:.1f} s after its creation ended")
        self.settle()
        for target, root in trees.items():
            n = ls_count(root, self.args.op_timeout)  # also the warm-up
            if n != files:
                raise BenchError(f"ls -lR {root} listed {n} files, not {files}")
        command = lambda root: ["ls", "-lR", "--color=never", str(root)]
        log("ls: warm")
        for run in range(self.runs):
            for target in self.order(run):
                self.record("ls_warm", target, timed_command(command(trees[target]), self.args.op_timeout))
        variants = [("ls_fresh", False)] + ([("ls_cold", True)] if self.drop else [])
        for key, dropping in variants:
            log(f"ls: first listing after a fresh mount{' and dropped caches' if dropping else ''}")
            for run in range(self.runs):
                for target in self.order(run):
                    if target == "ubiq":
                        self.ubiq.restart()
                        self.ubiq.wait_folder_uploaded(trees["ubiq"], files)
                        self.settle()
                    elif target == "rclone":
                        self.rclone.remount()
                    elif not dropping:
                        continue  # the disk has no fresh mount
                    if dropping:
                        drop_caches()
                    self.record(key, target, timed_command(command(trees[target]), self.args.op_timeout))
        self.info["daemon_start_seconds"] = list(self.ubiq.start_seconds)

    def order(self, run):
        targets = ["disk", "ubiq", "rclone"]
        return targets[run % 3:] + targets[:run % 3]

    # the big file, everywhere

    def ensure_big(self):
        """src/big.bin, disk/big.bin, the mount's big.bin (uploaded), rclone's remote big.bin."""
        source = self.src / "big.bin"
        if not source.exists():
            log(f"making a {self.size // MiB} MiB incompressible file")
            make_random_file(source, self.size)
            shutil.copyfile(source, self.disk / "big.bin")
            shutil.copyfile(source, self.rclone.remote / "big.bin")
            start = time.perf_counter()
            shutil.copyfile(source, self.ubiq.folder / "big.bin")
            os.sync()
            self.info["big_copy_into_mount_seconds"] = time.perf_counter() - start
            upload = self.ubiq.wait_uploaded(self.ubiq.folder / "big.bin")
            self.info["big_upload_seconds"] = upload
            log(f"  the mount's big.bin uploaded {upload:.1f} s after it was written")
            self.rclone.remount(remote_changed=True)
        return "big.bin"

    def phase_firstbyte(self):
        name = self.ensure_big()
        path = self.ubiq.folder / name
        log("firstbyte: evicted file through the mount, uncached file through rclone")
        for run in range(self.runs):
            for target in self.order(run):
                if target == "ubiq":
                    self.ubiq.evict(path)
                    self.settle()
                    result = run_child("firstbyte", path, timeout=self.args.op_timeout)
                elif target == "rclone":
                    self.rclone.remount(clear_cache=True)
                    result = run_child("firstbyte", self.rclone.mount_point / name, timeout=self.args.op_timeout)
                else:
                    if self.drop:
                        drop_caches()
                    result = run_child("firstbyte", self.disk / name, timeout=self.args.op_timeout)
                if result["bytes"] != self.size or result["size"] != self.size:
                    raise BenchError(f"firstbyte {target}: read {result['bytes']} bytes of {result['size']}, not {self.size}")
                self.record("firstbyte", target, result["seconds"])
                self.record("firstbyte_all", target, result["all"])
                # the last 64 KiB of the file not here (an archive's index, a video's moov)
                if target == "ubiq":
                    self.ubiq.evict(path)
                    self.settle()
                    result = run_child("lastbytes", path, timeout=self.args.op_timeout)
                elif target == "rclone":
                    self.rclone.remount(clear_cache=True)
                    result = run_child("lastbytes", self.rclone.mount_point / name, timeout=self.args.op_timeout)
                else:
                    if self.drop:
                        drop_caches()
                    result = run_child("lastbytes", self.disk / name, timeout=self.args.op_timeout)
                if result["bytes"] != min(self.size, 64 * 1024):
                    raise BenchError(f"lastbytes {target}: read {result['bytes']} bytes")
                self.record("lastbytes", target, result["seconds"])
        state = self.ubiq.status(path)
        if state.get("downloadingStatus") != "current":
            self.notes.append(f"after reading it, the evicted file's status is {state.get('downloadingStatus')}")

    # sequential read

    def phase_read(self):
        name = self.ensure_big()
        paths = {"disk": self.disk / name, "ubiq": self.ubiq.folder / name, "rclone": self.rclone.mount_point / name}
        state = self.ubiq.status(paths["ubiq"])
        if state.get("downloadingStatus") == "notDownloaded":
            self.ubiq.cli("download", paths["ubiq"])
        for target, path in paths.items():  # warm-up (rclone: into its VFS cache)
            result = run_child("read", path, timeout=self.args.op_timeout)
            if result["bytes"] != self.size:
                raise BenchError(f"read {target}: {result['bytes']} bytes, not {self.size}")
        log("read: warm")
        for run in range(self.runs):
            for target in self.order(run):
                self.record("read_warm", target, run_child("read", paths[target], timeout=self.args.op_timeout)["seconds"])
        if self.drop:
            log("read: cold (caches dropped)")
            for run in range(self.runs):
                for target in self.order(run):
                    drop_caches()
                    self.record("read_cold", target, run_child("read", paths[target], timeout=self.args.op_timeout)["seconds"])

    # sequential write

    def phase_write(self):
        log("write: 1 MiB writes + fsync of new files")
        upload_times, rclone_upload = [], []
        for run in range(self.runs):
            source = self.src / f"write-{run}.bin"
            make_random_file(source, self.size)
            for target in self.order(run):
                name = f"write-{run}.bin"
                folder = {"disk": self.disk, "ubiq": self.ubiq.folder, "rclone": self.rclone.mount_point}[target]
                result = run_child("write", folder / name, source, timeout=self.args.op_timeout)
                if result["bytes"] != self.size or os.stat(folder / name).st_size != self.size:
                    raise BenchError(f"write {target}: {result['bytes']} bytes written")
                self.record("write", target, result["seconds"])
                self.record("write_before_fsync", target, result["before_fsync"])
                if target == "ubiq":
                    upload_times.append(self.ubiq.wait_uploaded(folder / name))
                    os.remove(folder / name)
                elif target == "rclone":
                    rclone_upload.append(self.rclone.wait_remote_size(name, self.size, self.args.sync_timeout))
                    os.remove(folder / name)
                else:
                    os.remove(folder / name)
                self.settle()
            source.unlink()
        self.info["write_upload_seconds_after_close"] = upload_times
        self.info["write_rclone_upload_seconds_after_close"] = rclone_upload

    # untar

    def make_tarball(self):
        tarball = self.src / "tree.tar"
        if tarball.exists():
            return tarball
        wanted = self.args.untar_files
        checkouts = Path(self.args.untar_source) if self.args.untar_source else REPO / ".build" / "checkouts"
        files = []
        if checkouts.is_dir():
            sources, others = [], []
            for top, dirs, names in os.walk(checkouts):
                dirs[:] = sorted(d for d in dirs if d != ".git" and not d.startswith(".build"))
                for n in sorted(names):
                    p = Path(top) / n
                    if p.is_file() and not p.is_symlink():
                        (sources if "/Sources/" in str(p) else others).append(p)
            files = (sources + others)[:wanted]
        if len(files) >= wanted:
            with tarfile.open(tarball, "w") as tar:
                for p in files:
                    tar.add(p, arcname=str(p.relative_to(checkouts)), recursive=False)
            self.info["untar_source"] = f"{checkouts} (Sources first, then the rest; no .git)"
        else:
            log(f"untar: {checkouts} has fewer than {wanted} files: generating a tree of text files")
            rng = random.Random(23)
            with tarfile.open(tarball, "w") as tar:
                import io
                for i in range(wanted):
                    text = "".join(f"let value{j} = {rng.randrange(1 << 30)} // line {j}\n" for j in range(rng.randrange(5, 150)))
                    data = text.encode()
                    info = tarfile.TarInfo(f"src/m{i % 10}/p{(i // 10) % 20}/file{i:05d}.swift")
                    info.size, info.mode, info.mtime = len(data), 0o644, time.time()
                    tar.addfile(info, io.BytesIO(data))
            self.info["untar_source"] = "generated text files"
        with tarfile.open(tarball) as tar:
            members = tar.getmembers()
        self.info["untar_files"] = sum(1 for m in members if m.isfile())
        self.info["untar_bytes"] = sum(m.size for m in members if m.isfile())
        return tarball

    def phase_untar(self):
        tarball = self.make_tarball()
        files = self.info["untar_files"]
        log(f"untar: {files} files, {self.info['untar_bytes'] / MiB:.1f} MiB")
        uploads, rclone_uploads = [], []
        floor = FuseFloor(self.base, self.logs)
        if floor.available():
            floor.mount()
        else:
            floor = None
            self.notes.append("no FUSE floor: /usr/share/doc/libfuse3-dev/examples/passthrough_ll.c, cc or pkg-config is missing")
        for run in range(self.runs):
            targets = self.order(run) + (["floor"] if floor else [])
            if self.args.untar_skip_rclone:
                targets.remove("rclone")
            for target in targets:
                folder = {"disk": self.disk, "ubiq": self.ubiq.folder, "rclone": self.rclone.mount_point,
                          "floor": floor.mount_point if floor else None}[target] / f"untar-{run}"
                folder.mkdir()
                cpu = self.ubiq.cpu_seconds()
                self.record("untar", target, timed_command(["tar", "-xf", str(tarball), "-C", str(folder)], self.args.op_timeout))
                if target == "ubiq":
                    self.record("untar_daemon_cpu", target, self.ubiq.cpu_seconds() - cpu)
                n = count_files(folder)
                if n != files:
                    raise BenchError(f"untar into {target}: {n} files, not {files}")
                if target == "ubiq":
                    uploads.append(self.ubiq.wait_folder_uploaded(folder, files))
                elif target == "rclone":
                    rclone_uploads.append(self.rclone.wait_remote_count(f"untar-{run}", files, self.args.sync_timeout))
                self.settle()
        if floor:
            floor.unmount()
        self.info["untar_upload_seconds_after_tar"] = uploads
        self.info["untar_rclone_upload_seconds_after_tar"] = rclone_uploads

    # memory

    def phase_memory(self):
        if not self.ubiq.reset_peak():
            self.notes.append("cannot reset the daemon's VmHWM (/proc/PID/clear_refs): peaks are since its start")
        memory = []
        for size in sorted({self.small, self.size}):
            source = self.src / f"mem-{size // MiB}.bin"
            make_random_file(source, size)
            path = self.ubiq.folder / f"mem-{size // MiB}.bin"
            self.settle()

            def measure(operation, body):
                before = self.ubiq.rss()["VmRSS"]
                self.ubiq.reset_peak()
                body()
                after = self.ubiq.rss()
                row = {"operation": operation, "size_mib": size // MiB, "rss_before_kib": before,
                       "rss_after_kib": after["VmRSS"], "peak_kib": after["VmHWM"]}
                memory.append(row)
                log(f"memory: {operation} {size // MiB} MiB: RSS {before / 1024:.0f} -> {after['VmRSS'] / 1024:.0f} MiB, peak {after['VmHWM'] / 1024:.0f} MiB")

            def write_upload():
                run_child("write", path, source, timeout=self.args.op_timeout)
                self.ubiq.wait_uploaded(path)

            def download_read():
                self.ubiq.evict(path)
                run_child("firstbyte", path, timeout=self.args.op_timeout)

            measure("write + upload", write_upload)
            self.settle()
            measure("download (open evicted) + read", download_read)
            self.settle()
            measure("read (downloaded)", lambda: run_child("read", path, timeout=self.args.op_timeout))
            source.unlink()
        self.results["memory"] = memory

    # all

    def run(self):
        started = time.perf_counter()
        self.prepare()
        only = self.args.only.split(",") if self.args.only else PHASES
        for phase in PHASES:
            if phase in only:
                t = time.perf_counter()
                getattr(self, f"phase_{phase}")()
                self.info[f"phase_seconds_{phase}"] = round(time.perf_counter() - t, 1)
                self.ubiq.check_alive()
                self.info[f"daemon_rss_after_{phase}_kib"] = self.ubiq.rss()["VmRSS"]
        self.info["daemon_rss_end_kib"] = self.ubiq.rss()["VmRSS"]
        self.ubiq.stop()
        self.rclone.unmount()
        self.info["daemon_unclean_stops"] = self.ubiq.unclean_stops
        problems = self.ubiq.log_problems()
        self.info["daemon_log_problems"] = len(problems)
        self.info["daemon_log_problem_samples"] = problems[:20]
        self.info["total_seconds"] = round(time.perf_counter() - started, 1)

    # report

    def report(self):
        r = self.results
        lines = []
        a = self.args
        lines.append(f"## `ubiq daemon --mount` vs disk vs rclone mount ({self.runs} runs, medians)\n")
        lines.append(f"ubiq: `{a.ubiq}`; base: `{self.base}` ({self.info.get('base_fs')}); rclone: "
                     f"{subprocess.run(['rclone', 'version'], capture_output=True, text=True).stdout.splitlines()[0]} "
                     f"`mount :webdav: --vfs-cache-mode full` of `serve webdav` on 127.0.0.1\n")
        lines.append("| figure | ubiq mount | disk | rclone mount | ubiq / disk | ubiq / rclone | goal | met |")
        lines.append("|---|---:|---:|---:|---:|---:|---|---|")

        def fmt_t(v):
            if v is None:
                return "–"
            return f"{v * 1000:.1f} ms" if v < 1 else f"{v:.2f} s"

        def fmt_rate(v):
            return "–" if v is None else f"{self.size / MiB / v:.0f} MiB/s"

        def row(label, key, goal_text, check, rate=False):
            if key not in r:
                return
            m = {t: median(r[key].get(t, [])) for t in ("ubiq", "disk", "rclone")}
            fmt = fmt_rate if rate else fmt_t
            # ratios as the figure says: time ratio for times; throughput ratio for rates
            def ratio(x, y):
                if m[x] is None or m[y] is None:
                    return None
                return m[y] / m[x] if rate else m[x] / m[y]
            rd, rr = ratio("ubiq", "disk"), ratio("ubiq", "rclone")
            met = check(m, rd, rr)
            lines.append(f"| {label} | {fmt(m['ubiq'])} | {fmt(m['disk'])} | {fmt(m['rclone'])} | "
                         f"{'–' if rd is None else f'{rd:.2f}×'} | {'–' if rr is None else f'{rr:.2f}×'} | {goal_text} | "
                         f"{'' if met is None else ('yes' if met else '**no**')} |")

        n = self.info.get("ls_files", a.files)
        row(f"`ls -lR`, {n:,} files, warm", "ls_warm", "≤ 2× disk, < rclone",
            lambda m, rd, rr: rd is not None and rd <= 2 and (rr is None or rr < 1))
        row(f"`ls -lR`, first after a fresh mount", "ls_fresh", "≤ 2× disk (warm), < rclone",
            lambda m, rd, rr: None if rr is None else (rr < 1 and m["ubiq"] <= 2 * median(r["ls_warm"]["disk"])))
        row(f"`ls -lR`, cold (fresh mount, caches dropped)", "ls_cold", "≤ 2× disk, < rclone",
            lambda m, rd, rr: rd is not None and rd <= 2 and (rr is None or rr < 1))
        size_text = f"{self.size // MiB} MiB" if self.size < 1 << 30 else f"{self.size / (1 << 30):g} GiB"
        row(f"first byte of a not-downloaded {size_text} file (disk: cold cache)", "firstbyte", "≤ 50 ms",
            lambda m, rd, rr: m["ubiq"] is not None and m["ubiq"] <= 0.05)
        row(f"  the same open → last byte", "firstbyte_all", "", lambda m, rd, rr: None)
        if "lastbytes" in r:
            row(f"  open + read of its last 64 KiB (by range)", "lastbytes", "", lambda m, rd, rr: None)
        row(f"sequential read {size_text}, warm (MiB/s)", "read_warm", "≥ 0.7× disk", lambda m, rd, rr: rd is not None and rd >= 0.7, rate=True)
        row(f"sequential read {size_text}, cold (MiB/s)", "read_cold", "≥ 0.7× disk", lambda m, rd, rr: rd is not None and rd >= 0.7, rate=True)
        row(f"sequential write {size_text} + fsync (MiB/s)", "write", "≥ 0.5× disk", lambda m, rd, rr: rd is not None and rd >= 0.5, rate=True)
        row(f"  the same writes before fsync (MiB/s)", "write_before_fsync", "", lambda m, rd, rr: None, rate=True)
        if "untar" in r:
            row(f"`tar -xf` {self.info['untar_files']:,} files ({self.info['untar_bytes'] / MiB:.0f} MiB)", "untar", "≤ 3× disk",
                lambda m, rd, rr: rd is not None and rd <= 3)
        if "memory" in r:
            lines.append("\nDaemon memory (VmRSS before → after, peak VmHWM during; MiB):\n")
            lines.append("| operation | file | RSS before | RSS after | peak | peak − before |")
            lines.append("|---|---:|---:|---:|---:|---:|")
            growth = {}
            for m in r["memory"]:
                delta = (m["peak_kib"] - m["rss_before_kib"]) / 1024
                growth.setdefault(m["operation"], {})[m["size_mib"]] = delta
                lines.append(f"| {m['operation']} | {m['size_mib']} MiB | {m['rss_before_kib'] / 1024:.0f} | {m['rss_after_kib'] / 1024:.0f} | "
                             f"{m['peak_kib'] / 1024:.0f} | {delta:+.0f} |")
            small, big = self.small // MiB, self.size // MiB
            verdicts = []
            for op, d in growth.items():
                if small in d and big in d:
                    extra = d[big] - d[small]
                    flat = extra < 0.1 * (big - small)
                    verdicts.append(f"{op}: {extra:+.0f} MiB more for {big} than for {small} MiB ({'flat' if flat else '**grows**'})")
            lines.append("\nFlat in the file size (the extra peak for the bigger file < 10% of the size difference): "
                         + "; ".join(verdicts) + ".")
        info = self.info
        extra = []
        if "ls_create_seconds_ubiq" in info:
            extra.append(f"creating the {n:,}-file tree: ubiq mount {info['ls_create_seconds_ubiq']:.2f} s, disk "
                         f"{info['ls_create_seconds_disk']:.2f} s (then uploaded {info['ls_tree_upload_seconds_after_create']:.1f} s later)")
        if info.get("daemon_start_seconds"):
            extra.append("daemon start to mounted+ready: median " + f"{median(info['daemon_start_seconds']):.2f} s "
                         f"({len(info['daemon_start_seconds'])} starts)")
        if "big_upload_seconds" in info:
            extra.append(f"the {size_text} file uploaded {info['big_upload_seconds']:.1f} s after it was copied into the mount "
                         f"(copy: {info['big_copy_into_mount_seconds']:.1f} s)")
        if info.get("write_upload_seconds_after_close"):
            extra.append("written files uploaded after close: " + ", ".join(f"{s:.1f}" for s in info["write_upload_seconds_after_close"]) + " s")
        if "untar_daemon_cpu" in r:
            extra.append(f"daemon CPU time during the ubiq `tar -xf`: median {median(r['untar_daemon_cpu']['ubiq']):.2f} s "
                         f"(tar's wall time {median(r['untar']['ubiq']):.2f} s)")
        if "floor" in r.get("untar", {}):
            f, d, u = (median(r["untar"][t]) for t in ("floor", "disk", "ubiq"))
            extra.append(f"the FUSE floor (libfuse's passthrough_ll example over the same disk) untarred in {f:.2f} s: "
                         f"{f / d:.1f}× the disk; ubiq is {u / f:.1f}× the floor")
        if info.get("untar_upload_seconds_after_tar"):
            extra.append("untarred trees uploaded after tar ended: " + ", ".join(f"{s:.1f}" for s in info["untar_upload_seconds_after_tar"]) + " s")
        extra.append(f"daemon RSS at start {info['daemon_rss_start_kib'] / 1024:.0f} MiB, after each phase: "
                     + ", ".join(f"{p} {info[f'daemon_rss_after_{p}_kib'] / 1024:.0f}" for p in PHASES if f"daemon_rss_after_{p}_kib" in info)
                     + " MiB")
        extra.append(f"daemon log: {info['daemon_log_problems']} warning/error lines; unclean stops: {info['daemon_unclean_stops']}")
        extra.append("phases: " + ", ".join(f"{p} {info[f'phase_seconds_{p}']:.0f} s" for p in PHASES if f"phase_seconds_{p}" in info)
                     + f"; total {info['total_seconds']:.0f} s")
        lines.append("\n" + "\n".join(f"- {e}" for e in extra + self.notes))
        return "\n".join(lines)


def main():
    if sys.argv[1:2] == ["__child"]:
        return child_main(sys.argv[2:])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ubiq", required=True, help="the ubiq binary (a release build for figures)")
    parser.add_argument("--base", required=True, help="work folder on a real disk (its subfolders are replaced)")
    parser.add_argument("--files", type=int, default=10_000, help="files of the ls tree (100 per folder)")
    parser.add_argument("--file-bytes", type=int, default=1024)
    parser.add_argument("--size-mib", type=int, default=1024, help="the big file")
    parser.add_argument("--small-size-mib", type=int, default=256, help="the smaller file of the memory figure")
    parser.add_argument("--untar-files", type=int, default=5_000)
    parser.add_argument("--untar-skip-rclone", action="store_true", help="no rclone runs in the untar phase (about 100 s each)")
    parser.add_argument("--untar-source", help="a folder whose files make the tarball (default: the package checkouts)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", help="comma-separated: " + ",".join(PHASES))
    parser.add_argument("--json", help="write the results (every run) here")
    parser.add_argument("--keep", action="store_true", help="keep --base's data at the end")
    parser.add_argument("--fetch-timeout", type=float, default=600, help="--mount-fetch-timeout of the daemon (s)")
    parser.add_argument("--sync-timeout", type=float, default=1800, help="the longest wait for an upload (s)")
    parser.add_argument("--op-timeout", type=float, default=900, help="the longest one timed operation may take (s)")
    parser.add_argument("--settle", type=float, default=1.0, help="seconds of quiet before a measurement")
    args = parser.parse_args()
    if args.only:
        unknown = set(args.only.split(",")) - set(PHASES)
        if unknown:
            parser.error(f"--only: unknown {', '.join(sorted(unknown))}")
    for tool in ("rclone", "fusermount3", "tar"):
        if not shutil.which(tool):
            sys.exit(f"bench-mount: {tool} is missing (Debian: apt-get install -y rclone fuse3 tar)")

    atexit.register(cleanup)
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, on_signal)
    bench = Bench(args)
    status = 0
    try:
        bench.run()
    except BenchError as error:
        log(f"FAILED: {error}")
        status = 1
    except KeyboardInterrupt as error:
        log(f"interrupted ({error})")
        status = 130
    finally:
        cleanup()
        left = [p for p in mounts() if p.startswith(str(bench.base) + "/")]
        if left:
            log(f"still mounted: {left}")
        elif not args.keep:
            for name in ("ubiq-a", "disk", "rclone-remote", "rclone-mnt", "rclone-cache", "src", "fuse-floor"):
                shutil.rmtree(bench.base / name, ignore_errors=True)
    if status == 0 or bench.results:
        if status == 0:
            print(bench.report())
        else:
            print(json.dumps({"partial_results": bench.results, "info": bench.info}, indent=1, default=str))
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "results": bench.results, "info": bench.info,
                                               "notes": bench.notes, "status": status}, indent=1, default=str))
    return status


if __name__ == "__main__":
    sys.exit(main())
