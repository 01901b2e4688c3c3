#!/usr/bin/env python3
"""The smallest --target-tokens under which `run` keeps a row's group of parallel calls
(bench/gen.py parallel): found by bisection with the binary itself. One token below it,
the fit must drop the whole group in one step (issue #40).

Usage: fit_target.py BIN ROW.jsonl"""

import subprocess
import sys


def keeps(binary, row, target):
    out = subprocess.run([binary, "run", row, "--target-tokens", str(target)], capture_output=True, check=True).stdout
    return b'"p_0"' in out


def main():
    binary, row = sys.argv[1], sys.argv[2]
    out = subprocess.run([binary, "stats", "--json", row], capture_output=True, check=True).stdout
    import json
    lo, hi = 1000, json.loads(out)["tokens_estimated"]
    if not keeps(binary, row, hi) or keeps(binary, row, lo):
        sys.exit("fit_target.py: the row keeps its group at its own size and not at 1,000 tokens, or it is not such a row")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if keeps(binary, row, mid):
            hi = mid
        else:
            lo = mid
    print(hi)


if __name__ == "__main__":
    main()
