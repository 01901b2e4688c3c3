#!/usr/bin/env python3
"""Benchmark (issue #24): the Python package's batch function over a dataset, as a
dataset builder calls it: read the lines, compact them all in one call, write them.
With RIVUMI_BENCH_CALL_TIMES=FILE, the wall time of the call alone is appended to FILE
(the bench reports it beside the whole script's)."""
import os
import sys
import time

import rivumi_compact as rc

budget = int(sys.argv[3]) if len(sys.argv) > 3 else 3000
with open(sys.argv[1], "rb") as f:
    lines = f.readlines()
start = time.perf_counter()
out = rc.compact_lines(lines, task__max_total_tokens=budget)
call = time.perf_counter() - start
with open(sys.argv[2], "wb") as w:
    w.writelines(out)
if os.environ.get("RIVUMI_BENCH_CALL_TIMES"):
    with open(os.environ["RIVUMI_BENCH_CALL_TIMES"], "a") as t:
        t.write(f"{call}\n")
