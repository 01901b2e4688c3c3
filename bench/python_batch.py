#!/usr/bin/env python3
"""Benchmark (issue #24): the Python package's batch function over a dataset, as a
dataset builder calls it: read the lines, compact them all in one call, write them."""
import sys

import rivumi_compact as rc

budget = int(sys.argv[3]) if len(sys.argv) > 3 else 3000
with open(sys.argv[1], "rb") as f:
    lines = f.readlines()
out = rc.compact_lines(lines, task__max_total_tokens=budget)
with open(sys.argv[2], "wb") as w:
    w.writelines(out)
