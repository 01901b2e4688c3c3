#!/usr/bin/env python3
"""Dataset mode as a Spark job, checked (run it with examples/spark/run.sh).

    compact_with_spark.py RIVUMI_BIN WORK_DIR

Generates 10,000 OpenAI-format conversations (bench/gen.py), splits them into four
files, compacts them with `RDD.pipe` in local mode, and checks that the job gives as
many lines as it read and the same bytes as a plain run over the same files. Then it
puts one bad line in a copy of the input and checks that the job fails.
"""
import os
import subprocess
import sys

from pyspark import SparkConf, SparkContext

BUDGET = "3000"


# --- the recipe (README "Spark") ---------------------------------------------------
def compact(sc, paths, rivumi_bin, budget):
    """Compacts OpenAI-format JSONL files with Spark; returns the RDD of output lines.

    RDD.pipe starts the command with an empty environment unless given one, so the
    binary is named by its absolute path and PATH/LANG are passed on. checkCode=True
    makes a non-zero exit (a bad line exits 4, after echoing it) fail the task instead
    of passing silently.
    """
    command = f"{os.path.abspath(rivumi_bin)} run - --input-format openai --max-total-tokens {budget}"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    lines = sc.textFile(",".join(paths))  # comma-separated paths keep their order
    return lines.pipe(command, env=env, checkCode=True)
# ------------------------------------------------------------------------------------


def split(source, work, parts):
    with open(source, encoding="utf-8") as f:
        lines = f.readlines()
    size = -(-len(lines) // parts)
    paths = []
    for k in range(parts):
        path = os.path.join(work, f"part-{k:02}.jsonl")
        with open(path, "w", encoding="utf-8") as out:
            out.writelines(lines[k * size:(k + 1) * size])
        paths.append(path)
    return paths, len(lines)


def main():
    rivumi_bin, work = sys.argv[1], sys.argv[2]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    source = os.path.join(work, "all.jsonl")
    subprocess.run([sys.executable, os.path.join(root, "bench", "gen.py"), "dataset", source, "--lines", "10000"], check=True)
    paths, count = split(source, work, 4)
    assert count >= 10000, count

    # The plain run over the same lines, in the same order.
    plain = subprocess.run([rivumi_bin, "run", source, "--max-total-tokens", BUDGET],
                           check=True, capture_output=True).stdout

    conf = SparkConf().setMaster("local[2]").setAppName("rivumi-compact").set("spark.ui.enabled", "false").set("spark.ui.showConsoleProgress", "false")
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    try:
        out_dir = os.path.join(work, "compacted")
        compact(sc, paths, rivumi_bin, BUDGET).saveAsTextFile(out_dir)
        parts = sorted(p for p in os.listdir(out_dir) if p.startswith("part-"))
        spark = b"".join(open(os.path.join(out_dir, p), "rb").read() for p in parts)
        lines = spark.count(b"\n")
        changed = sum(1 for a, b in zip(open(source, "rb"), spark.splitlines(keepends=True)) if a != b)
        print(f"spark: {count} lines in, {lines} lines out in {len(parts)} partitions, {changed} compacted")
        assert lines == count, f"{lines} lines out for {count} in"
        assert spark == plain, "the Spark output differs from a plain run"
        assert changed > 0, "no line was compacted: the check would prove nothing"
        print("spark: output equals a plain run byte for byte")

        # One bad line: the task exits 4 and the job fails.
        bad = os.path.join(work, "bad")
        os.mkdir(bad)
        bad_paths, _ = split(source, bad, 4)
        with open(bad_paths[2], "a", encoding="utf-8") as f:
            f.write('{"messages": [{"role": "user", "content": "cut here\n')
        try:
            compact(sc, bad_paths, rivumi_bin, BUDGET).count()
        except Exception as e:  # Py4JJavaError wrapping the task's PipeCommandError
            assert "exited with error code 4" in str(e) or "error code 4" in str(e), str(e)[:2000]
            print("spark: a bad line fails the job (the command exited with error code 4)")
        else:
            raise AssertionError("a bad line passed silently")
    finally:
        sc.stop()
    print("spark: ok")


if __name__ == "__main__":
    main()
