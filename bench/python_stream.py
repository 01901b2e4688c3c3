#!/usr/bin/env python3
"""Benchmark (issues #37, #39): the Python package's streaming calls over a dataset,
the file read by Rust. `file`: compact_file(path, output), path in and path out;
`iter`: iter_file(path), each output line handed to Python and written by it.
Usage: python_stream.py file|iter INPUT OUTPUT [BUDGET]"""
import sys

import rivumi_compact as rc

mode, src, dst = sys.argv[1], sys.argv[2], sys.argv[3]
budget = int(sys.argv[4]) if len(sys.argv) > 4 else 3000
if mode == "file":
    rc.compact_file(src, dst, task__max_total_tokens=budget)
elif mode == "iter":
    with open(dst, "wb") as w:
        w.writelines(rc.iter_file(src, binary=True, task__max_total_tokens=budget))
else:
    sys.exit(f"python_stream.py: mode is file or iter, not {mode!r}")
