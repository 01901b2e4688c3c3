#!/usr/bin/env python3
"""Benchmark baseline (SPEC 10): the least a Python pass would do — parse every line
with json.loads and write the kept ones back."""
import json
import sys

with open(sys.argv[1], "rb") as f, open(sys.argv[2], "wb") as out:
    for line in f:
        if line.strip():
            json.loads(line)
            out.write(line)
