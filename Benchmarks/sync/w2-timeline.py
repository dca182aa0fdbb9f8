#!/usr/bin/env python3
"""Where workload 2's time goes, as it happens: run next to `bench-sync.py --workloads 2` with the
same `--base`, it prints every 0.1 s the live records in the server's store and the files under
each device's `w2` folder, until both devices have 10,000 (or 30 s passed).

    Benchmarks/sync/w2-timeline.py /mnt/tmpw2/b &
    Benchmarks/sync/bench-sync.py --tools ubiquity --workloads 2 --base /mnt/tmpw2/b ...

The server's count is read from its SQLite file (read-only; WAL readers do not block it).
Python 3 standard library only.
"""
import glob
import os
import sqlite3
import sys
import time


def w2_folders(base):
    return sorted(glob.glob(os.path.join(base, "**", "w2"), recursive=True))


def count_files(folder):
    total = 0
    try:
        for entry in os.scandir(folder):
            if entry.is_dir():
                total += sum(1 for _ in os.scandir(entry.path))
    except OSError:
        pass
    return total


def main():
    base = sys.argv[1] if len(sys.argv) > 1 else "."
    files = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    while True:  # until the server's store and the first w2 folder exist
        stores = glob.glob(os.path.join(base, "**", "records.sqlite"), recursive=True)
        if stores and w2_folders(base):
            break
        time.sleep(0.02)
    store = sqlite3.connect(f"file:{stores[0]}?mode=ro", uri=True)
    start = time.monotonic()
    while time.monotonic() < start + 30:
        try:
            records = store.execute("SELECT count(*) FROM records WHERE deleted = 0").fetchone()[0]
        except sqlite3.Error:
            records = -1
        counts = {folder[len(base):]: count_files(folder) for folder in w2_folders(base)}
        print(f"{time.monotonic() - start:5.2f} server={records} "
              + " ".join(f"{name}={count}" for name, count in counts.items()), flush=True)
        if len(counts) >= 2 and all(count >= files for count in counts.values()) and records >= files:
            return
        time.sleep(0.1)


if __name__ == "__main__":
    main()
