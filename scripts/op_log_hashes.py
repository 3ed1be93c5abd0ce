#!/usr/bin/env python3
"""Re-records tests/sc_main/op_log_hashes.json: runs each case's `kernbench run ARGS
--op-log FILE` and writes its record count and the 64-bit FNV-1a hash of the file.
Only for a change that means to move simulated timing; say why in its commit.

usage: op_log_hashes.py [BUILD_DIR]   (default build/release)
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


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build/release"
    with open(CASES) as f:
        cases = json.load(f)
    with tempfile.TemporaryDirectory() as tmp:
        for c in cases:
            log = os.path.join(tmp, c["name"] + ".jsonl")
            args = c["args"].replace("TOPOLOGIES/", os.path.abspath("topologies") + "/").split()
            subprocess.run([os.path.join(build, "kernbench"), "run", *args, "--op-log", log], check=True,
                           stdout=subprocess.DEVNULL)
            data = open(log, "rb").read()
            c["records"] = data.count(b"\n")
            c["hash"] = f"{fnv1a(data):016x}"
            print(f"{c['name']}: {c['records']} records, {c['hash']}")
    with open(CASES + ".tmp", "w") as f:
        json.dump(cases, f, indent=1)
        f.write("\n")
    os.replace(CASES + ".tmp", CASES)


if __name__ == "__main__":
    main()
