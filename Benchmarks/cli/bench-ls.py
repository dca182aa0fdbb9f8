#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`ubiq ls -R` and `ubiq status` on a 100,000-item folder, beside `ls -R` and `find`.

Creates the tree (1,000 folders of 99 files each, plus the folders: 100,000 items) and its
index (`ubiq index scan`, as the daemon's indexer does), then times each command several times
(output to /dev/null, warm page cache) and prints the medians and the ratios to `find`.

    swift build -c release --product ubiq
    Benchmarks/cli/bench-ls.py --ubiq .build/release/ubiq [--items 100000] [--runs 5] [--json]

The tree is kept in --work (default a temporary folder, removed at the end unless --keep).
"""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time


def make_tree(root, items):
    folders = max(1, items // 100)
    per_folder = (items - folders) // folders
    extra = items - folders - per_folder * folders
    count = 0
    for f in range(folders):
        d = os.path.join(root, "d%04d" % f)
        os.mkdir(d)
        count += 1
        n = per_folder + (1 if f < extra else 0)
        for i in range(n):
            with open(os.path.join(d, "file-%05d.txt" % i), "w") as out:
                out.write("x" * (i % 64))
            count += 1
    return count


def timed(command, env, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append(time.perf_counter() - start)
        if result.returncode != 0:
            sys.exit("failed (%d): %s\n%s" % (result.returncode, " ".join(command), result.stderr.decode()))
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ubiq", default=".build/release/ubiq")
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--work")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    ubiq = os.path.abspath(args.ubiq)
    work = args.work or tempfile.mkdtemp(prefix="ubq-bench-ls-")
    os.makedirs(work, exist_ok=True)
    folder = os.path.join(work, "Ubiquity")
    database = os.path.join(work, "index.sqlite")
    env = dict(os.environ)
    for name in ["home", "state", "data", "config", "run"]:
        os.makedirs(os.path.join(work, name), exist_ok=True)
    env.update(HOME=os.path.join(work, "home"), XDG_STATE_HOME=os.path.join(work, "state"),
               XDG_DATA_HOME=os.path.join(work, "data"), XDG_CONFIG_HOME=os.path.join(work, "config"),
               XDG_RUNTIME_DIR=os.path.join(work, "run"), UBIQUITY_FOLDER=folder,
               UBIQUITY_INDEX_DATABASE=database, LC_ALL="C")
    try:
        if not os.path.isdir(folder):
            os.mkdir(folder)
            start = time.perf_counter()
            count = make_tree(folder, args.items)
            print("created %d items in %.1f s" % (count, time.perf_counter() - start), file=sys.stderr)
        scan = subprocess.run([ubiq, "index", "scan", folder, "--database", database, "--json"], env=env,
                              capture_output=True, text=True)
        if scan.returncode != 0:
            sys.exit("ubiq index scan failed: " + scan.stderr)
        print("indexed: " + scan.stdout.strip(), file=sys.stderr)

        commands = {
            "find": ["find", folder],
            "ls -R": ["ls", "-R", folder],
            "find -printf size,mtime": ["find", folder, "-printf", "%s %T@ %p\n"],  # stats every item, as -l does
            "ls -lR": ["ls", "-lR", folder],
            "ubiq ls -R": [ubiq, "ls", "-R"],
            "ubiq ls -R -l": [ubiq, "ls", "-R", "-l"],
            "ubiq ls -R --json": [ubiq, "ls", "-R", "--json"],
            "ubiq status FOLDER": [ubiq, "status", folder],
        }
        results = {}
        for name, command in commands.items():
            timed(command, env, 1)  # warm up
            times = timed(command, env, args.runs)
            results[name] = statistics.median(times)
        base = results["find"]
        if args.json:
            print(json.dumps({"items": args.items, "runs": args.runs,
                              "median_seconds": results, "ratio_to_find": {k: v / base for k, v in results.items()}}, indent=2))
        else:
            print("%-24s %10s %10s" % ("command", "median s", "x find"))
            for name, seconds in results.items():
                print("%-24s %10.3f %10.2f" % (name, seconds, seconds / base))
    finally:
        if not args.keep and not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
