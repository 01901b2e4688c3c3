#!/usr/bin/env python3
"""Times commands the way users meet them (bench/README.md): interleaved, each run right
after a program that leaves memory as a memory-hungry program does, for several rounds;
prints, per command, the median wall time, its min-max, and the median system time.

  measure.py --rounds 7 --before 'jq -c . big.jsonl' NAME='COMMAND' NAME='COMMAND' ...

--before runs (untimed) before each timed command ("" for none: warm runs). Output:
one JSON object per command on stdout: name, median, min, max, sys (median), samples.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import time


def timed(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_stime - before.ru_stime, after.ru_utime - before.ru_utime


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=int(os.environ.get("BENCH_ROUNDS", "5")))
    p.add_argument("--before", default="")
    p.add_argument("commands", nargs="+")
    a = p.parse_args()
    named = [c.split("=", 1) for c in a.commands]
    samples = {n: [] for n, _ in named}
    for _ in range(a.rounds):
        for name, cmd in named:
            if a.before:
                subprocess.run(a.before, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            samples[name].append(timed(cmd))
    for name, _ in named:
        walls = [s[0] for s in samples[name]]
        print(json.dumps({"name": name, "median": statistics.median(walls), "min": min(walls), "max": max(walls),
                          "sys": statistics.median(s[1] for s in samples[name]),
                          "user": statistics.median(s[2] for s in samples[name]), "samples": walls}))


if __name__ == "__main__":
    main()
