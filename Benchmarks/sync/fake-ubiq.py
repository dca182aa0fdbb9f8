#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A stand-in for `ubiq` that speaks the command lines bench-sync.py's Ubiquity class uses, to test
the harness's Ubiquity plumbing before the sync engine exists. NOT a benchmark of anything.

    Benchmarks/sync/bench-sync.py --tools ubiquity --ubiq Benchmarks/sync/fake-ubiq.py --quick --workloads 1,2,6

`serve` listens on a loopback port and prints `listening on URL`; `admin user add` and `account
login` check the password on stdin and write small files; `daemon --folder DIR` (device A) copies
new or changed files from DIR to DATA/store every 50 ms by temp file + rename, and (device B)
copies them from there into DIR the same way. It knows nothing of deletes or renames (workload 4
times out), and the data travels through the file system, not loopback.
"""

import json
import os
import signal
import socket
import sys
import time

PASSWORD_FILE = "fake-password"


def opt(args, name, default=None):
    return args[args.index(name) + 1] if name in args else default


def config_dir():
    return os.path.join(os.environ["XDG_CONFIG_HOME"], "ubiquity")


def copy_tree(src, dst):
    for dirpath, dirnames, filenames in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        for fn in filenames:
            if fn.startswith(".ubiquity"):
                continue
            s = os.path.join(dirpath, fn)
            d = os.path.normpath(os.path.join(dst, rel, fn))
            try:
                with open(s, "rb") as f:
                    data = f.read()
                try:
                    with open(d, "rb") as f:
                        if f.read() == data:
                            continue
                except OSError:
                    pass
                os.makedirs(os.path.dirname(d), exist_ok=True)
                tmp = os.path.join(os.path.dirname(d), f".ubiquity-tmp-{fn}")
                with open(tmp, "wb") as f:
                    f.write(data)
                os.rename(tmp, d)
            except OSError:
                pass


def main(args):
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    if args[:1] == ["serve"]:
        data = opt(args, "--data")
        s = socket.socket()
        s.bind(("127.0.0.1", int(opt(args, "--port", "0"))))
        s.listen()
        os.makedirs(os.path.join(data, "store"), exist_ok=True)
        print(f"listening on http://127.0.0.1:{s.getsockname()[1]}", flush=True)
        with open(os.path.join(data, "url"), "w") as f:
            f.write(f"http://127.0.0.1:{s.getsockname()[1]}")
        while True:
            conn, _ = s.accept()
            conn.close()
    if args[:1] == ["admin"]:
        password = sys.stdin.read()
        if not password or "\n" in password:
            sys.exit("fake ubiq admin: expected the password on stdin without a newline")
        with open(os.path.join(opt(args, "--data"), PASSWORD_FILE), "w") as f:
            f.write(password)
        return
    if args[:2] == ["account", "login"]:
        password = sys.stdin.readline().rstrip("\n")
        server = opt(args, "--server")
        # The fake server's data folder: bench-sync.py puts it beside the devices' folders.
        base = os.path.join(os.path.dirname(os.environ["HOME"]), "..", "ubq-server")
        with open(os.path.join(base, PASSWORD_FILE)) as f:
            if f.read() != password:
                sys.exit("fake ubiq account login: wrong password")
        os.makedirs(config_dir(), exist_ok=True)
        with open(os.path.join(config_dir(), "account.json"), "w") as f:
            json.dump({"server": server, "user": opt(args, "--user"), "device": opt(args, "--device-name"),
                       "store": os.path.realpath(os.path.join(base, "store"))}, f)
        print(f"signed in as {opt(args, '--user')}")
        return
    if args[:1] == ["daemon"]:
        folder = opt(args, "--folder")
        with open(os.path.join(config_dir(), "account.json")) as f:
            account = json.load(f)
        print(f"control service listening on {os.environ['XDG_RUNTIME_DIR']}/control.sock", flush=True)
        while True:
            if account["device"] == "A":
                copy_tree(folder, account["store"])
            else:
                copy_tree(account["store"], folder)
            time.sleep(0.05)
    sys.exit(f"fake ubiq: unsupported command {' '.join(args)}")


if __name__ == "__main__":
    main(sys.argv[1:])
