#!/usr/bin/env python3
"""The op logs of a fixed set of runs (tests/sc_main/op_log_hashes.json): runs each
case's `kernbench run ARGS --op-log FILE` and takes its record count and the 64-bit
FNV-1a hash of the file.

  op_log_hashes.py [BUILD_DIR]          re-records the file; only for a change that means
                                        to move simulated timing (say why in its commit)
  op_log_hashes.py --check BUILD_DIR    fails unless every case matches the file
  op_log_hashes.py --run BUILD_DIR      only runs the cases (a profile build's training)

BUILD_DIR defaults to build/release.
"""
import json
import os
import subprocess
import sys
import tempfile

CASES = "tests/sc_main/op_log_hashes.json"


def fnv1a(data):
    h = 1469598103934665603
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def measure(build, cases):
    """Each case's (records, hash) in this build."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for c in cases:
            log = os.path.join(tmp, c["name"] + ".jsonl")
            args = c["args"].replace("TOPOLOGIES/", os.path.abspath("topologies") + "/").split()
            subprocess.run([os.path.join(build, "kernbench"), "run", *args, "--op-log", log], check=True,
                           stdout=subprocess.DEVNULL)
            data = open(log, "rb").read()
            out.append((data.count(b"\n"), f"{fnv1a(data):016x}"))
    return out


def main():
    args = sys.argv[1:]
    mode = args.pop(0) if args and args[0] in ("--check", "--run") else "--record"
    if len(args) > 1 or (args and args[0].startswith("-")):
        sys.exit(__doc__)
    build = args[0] if args else "build/release"
    if not os.access(os.path.join(build, "kernbench"), os.X_OK):
        sys.exit(f"op_log_hashes: no program {os.path.join(build, 'kernbench')} (build it first)")
    with open(CASES) as f:
        cases = json.load(f)
    measured = measure(build, cases)
    if mode == "--run":
        return
    if mode == "--check":
        bad = [(c, m) for c, m in zip(cases, measured) if (c["records"], c["hash"]) != m]
        for c, (records, digest) in bad:
            print(f"op log of '{c['name']}' differs: {records} records, {digest}; "
                  f"recorded {c['records']} records, {c['hash']}")
        print(f"op_log_hashes: {len(cases) - len(bad)} of {len(cases)} cases match {CASES}")
        sys.exit(1 if bad else 0)
    for c, (records, digest) in zip(cases, measured):
        c["records"], c["hash"] = records, digest
        print(f"{c['name']}: {records} records, {digest}")
    with open(CASES + ".tmp", "w") as f:
        json.dump(cases, f, indent=1)
        f.write("\n")
    os.replace(CASES + ".tmp", CASES)


if __name__ == "__main__":
    main()
