#!/usr/bin/env bash
# Runs examples/spark/compact_with_spark.py: installs pyspark into a virtual
# environment (target/spark-venv, once), builds the tool, and runs dataset mode as a
# Spark job in local mode. Needs python3 and a Java runtime (17 works).
#   bash examples/spark/run.sh                 # build the debug binary and run
#   RIVUMI_BIN=target/release/rivumi-compact bash examples/spark/run.sh
# .ci/run calls this when RIVUMI_SPARK=1.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=${SPARK_VENV:-target/spark-venv}
if ! "$venv/bin/python" -c 'import pyspark' 2> /dev/null; then
  echo "examples/spark: installing pyspark into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet pyspark
fi
if [ -z "${RIVUMI_BIN:-}" ]; then
  cargo build --quiet --bin rivumi-compact
  RIVUMI_BIN=target/debug/rivumi-compact
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/rivumi-spark.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$venv/bin/python" examples/spark/compact_with_spark.py "$RIVUMI_BIN" "$work"
