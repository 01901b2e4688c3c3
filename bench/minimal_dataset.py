#!/usr/bin/env python3
"""Benchmark baseline (SPEC 10): the least a Python pass over a dataset would do — parse
every line with json.loads and write it back with json.dumps."""
import json
import sys

with open(sys.argv[1], "rb") as f, open(sys.argv[2], "w", encoding="utf-8") as out:
    for line in f:
        if line.strip():
            out.write(json.dumps(json.loads(line), ensure_ascii=False) + "\n")
