#!/usr/bin/env bash
# The performance benchmark (SPEC 10, issues #24 and #26). Generates inputs with a fixed
# seed, builds the release binary, and times it against baselines in the same run, the
# way users meet it: every timed command interleaved with the others for several
# rounds, each run right after `jq -c .` over the large input (a program that leaves
# memory as a memory-hungry program does); medians, their min-max, and system time.
# The method and the history of the figures are in bench/README.md.
#   bash bench/run.sh            # full: 150 MB transcript, 15 MB step, 10,000 files, datasets
#   BENCH_MB=30 BENCH_FILES=2000 bash bench/run.sh   # quicker, same shape
#   BENCH_ONLY=dataset bash bench/run.sh              # only the dataset-mode section
#   BENCH_ONLY=fit bash bench/run.sh                  # only the size-to-fit section (#40)
#   BENCH_ROUNDS=7 ...                                 # rounds per measure (default 5)
#   BENCH_BEFORE=none ...                              # warm runs, nothing before each
# The LangChain baseline and the Python package run in a virtual environment under
# bench/out (created when missing; skipped with a message when it cannot be).
set -euo pipefail
cd "$(dirname "$0")/.."
MB=${BENCH_MB:-150}
FILES=${BENCH_FILES:-10000}
ROUNDS=${BENCH_ROUNDS:-5}
OUT=${BENCH_DIR:-bench/out}
mkdir -p "$OUT"
cargo build --release --quiet --bin rivumi-compact
# The floors (issue #39): serde_json, sonic-rs and simd-json parsing every line, on one
# and on two threads. Built twice, apart from the tool: SPEC 10's serde floor and the
# tool's own reads as the tool is built (the release profile, no CPU flags: a ratio to
# them compares code, not compiler flags), the SIMD floors for this machine's CPU
# (`target-cpu=native`, as the SIMD crates ask to use AVX2 and CLMUL); the serde floor
# built so too is measured beside them, for the record.
CARGO_TARGET_DIR=target/floors-tool cargo build --release --quiet --features bench-floors --example bare_parse
RUSTFLAGS="-C target-cpu=native" CARGO_TARGET_DIR=target/floors \
  cargo build --release --quiet --features bench-floors --example bare_parse
BIN=target/release/rivumi-compact
BARE=target/floors-tool/release/examples/bare_parse
SIMD=target/floors/release/examples/bare_parse

big="$OUT/big-${MB}mb.jsonl"
[ -f "$big" ] || python3 bench/gen.py big "$big" --mb "$MB"
BEFORE="jq -c . $big"
[ "${BENCH_BEFORE:-}" = none ] && BEFORE=""

# measure NAME=COMMAND...: interleaved rounds; sets MED[name], MIN, MAX, SYS, and
# SAMP[name] (the rounds' times in order, comma-separated).
declare -A MED MIN MAX SYS SAMP
measure() {
  local line name
  while IFS= read -r line; do
    name=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["name"])' "$line")
    read -r MED[$name] MIN[$name] MAX[$name] SYS[$name] SAMP[$name] < <(python3 -c \
      'import json,sys; d=json.loads(sys.argv[1]); print(d["median"], d["min"], d["max"], d["sys"], ",".join(map(str, d["samples"])))' "$line")
  done < <(python3 bench/measure.py --rounds "$ROUNDS" --before "$BEFORE" "$@")
}
# round_ratios A B: A's time over B's in each round (the two measured in one call, so
# each pair ran within a minute or so): their median and min-max. A slow spell of the
# machine falls on both of a pair, so this spread says how sure a ratio of medians is.
round_ratios() {
  python3 -c 'import statistics,sys
r=[a/b for a,b in zip(map(float,sys.argv[1].split(",")),map(float,sys.argv[2].split(",")))]
print(f"{statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f})")' "${SAMP[$1]}" "${SAMP[$2]}"
}
row() { printf '%-46s %9s %13s %7s %8s %8s\n' "$1" "$2" "$3" "$4" "$5" "$6"; }
secs() { printf '%.3f' "$1"; }
ratio() { python3 -c "print(f'{$1/$2:.2f}')"; }
spread() { printf '%.3f-%.3f' "${MIN[$1]}" "${MAX[$1]}"; }
# a table row for a measure: name, its median, min-max, sys, ratio and target
mrow() { row "$1" "$(secs "${MED[$2]}")" "$(spread "$2")" "$(secs "${SYS[$2]}")" "$3" "$4"; }
peak_kb() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1; }
header() { row "measure" "median s" "min-max" "sys s" "ratio" "target"; }
# floors PREFIX: the rows of the parser floors measured as PREFIX_bare2, _sonic1 ... (ratio
# to the one-thread serde floor PREFIX_bare).
floors() {
  local p=$1 k
  for k in bare2:"serde_json, 2 threads" baren:"serde_json, 1 thread, built for this CPU" \
      sonic1:"sonic-rs, 1 thread" sonic2:"sonic-rs, 2 threads" \
      simd1:"simd-json tape, 1 thread" simd2:"simd-json tape, 2 threads"; do
    mrow "  floor: ${k#*:}" "${p}_${k%%:*}" "$(ratio "${MED[${p}_${k%%:*}]}" "${MED[${p}_bare]}")" ""
  done
}
# own PREFIX [LABEL NAME]: the tool's own scanner (and with LABEL, another of its reads)
# run as a floor is, one thread: by how much it beats the parser crates.
own() {
  local p=$1
  mrow "  the tool's scanner alone, 1 thread" "${p}_scan1" "$(ratio "${MED[${p}_scan1]}" "${MED[${p}_bare]}")" ""
  echo "    scanner vs one-thread floors: serde $(ratio "${MED[${p}_scan1]}" "${MED[${p}_bare]}") sonic $(ratio "${MED[${p}_scan1]}" "${MED[${p}_sonic1]}") simd-json $(ratio "${MED[${p}_scan1]}" "${MED[${p}_simd1]}")"
  if [ $# -gt 1 ]; then
    mrow "  the tool's $2, 1 thread" "${p}_$3" "$(ratio "${MED[${p}_$3]}" "${MED[${p}_bare]}")" ""
  fi
}
# vs_floors PREFIX NAME TARGET: NAME's ratio to every floor, on one line.
vs_floors() {
  local p=$1 n=$2 k out=""
  for k in bare:serde1 baren:serde1-cpu bare2:serde2 sonic1:sonic1 sonic2:sonic2 simd1:simd1 simd2:simd2; do
    out+=" ${k#*:} $(ratio "${MED[$n]}" "${MED[${p}_${k%%:*}]}")"
  done
  echo "    $n vs floors:$out${3:+ (target: $3)}"
}

venv="$OUT/venv"
python_env() {
  if ! "$venv/bin/python" -c 'import langchain_core' 2> /dev/null; then
    echo "installing langchain-core into $venv for the LangChain baseline..." >&2
    { python3 -m venv "$venv" && "$venv/bin/pip" install --quiet langchain-core; } > /dev/null 2>&1 || true
  fi
  # Built again when the engine or the package changed since the last install.
  local stamp="$venv/.rivumi-built"
  if ! "$venv/bin/python" -c 'import rivumi_compact' 2> /dev/null \
      || [ -n "$(find src crates python/src python/rivumi_compact python/Cargo.toml Cargo.toml -newer "$stamp" -print -quit 2> /dev/null || echo missing)" ]; then
    echo "installing the Python package (pip install ./python, a release build) into $venv..." >&2
    "$venv/bin/pip" install --quiet --force-reinstall --no-deps ./python > /dev/null 2>&1 && touch "$stamp" || true
  fi
}

agents="$OUT/agents-10k.jsonl"
[ -f "$agents" ] || python3 bench/gen.py agents "$agents" --lines 10000
# Dataset mode (SPEC 10) on 10,000 agent trajectories with tool calls: a budget where
# every line compacts (3000 tokens) and one where none does, against a bare parse of the
# same file, the Python passes a dataset builder would otherwise write, and the Python
# package's batch function.
dataset_bench() {
  local half_a="$OUT/agents-half-a.jsonl" half_b="$OUT/agents-half-b.jsonl"
  if [ ! -f "$half_b" ]; then
    head -n 5000 "$agents" > "$half_a"
    tail -n +5001 "$agents" > "$half_b"
  fi
  python_env
  local cmds=(
    "ds_bare=$BARE $agents"
    "ds_bare2=$BARE --threads 2 $agents"
    "ds_baren=$SIMD $agents"
    "ds_sonic1=$SIMD --parser sonic $agents"
    "ds_sonic2=$SIMD --parser sonic --threads 2 $agents"
    "ds_simd1=$SIMD --parser simd-json $agents"
    "ds_simd2=$SIMD --parser simd-json --threads 2 $agents"
    "ds_scan1=$BARE --parser scan $agents"
    "ds_view1=$BARE --parser view $agents"
    "ds_most=$BIN run $agents --max-total-tokens 3000"
    "ds_none=$BIN run $agents --max-total-tokens 100000000"
    "ds_most1=$BIN run $agents --max-total-tokens 3000 --jobs 1"
    "ds_halves=$BIN run $half_a --max-total-tokens 3000 --jobs 1 & $BIN run $half_b --max-total-tokens 3000 --jobs 1; wait"
    "ds_py=python3 bench/minimal_dataset.py $agents /dev/null"
  )
  local have_lc="" have_pkg=""
  "$venv/bin/python" -c 'import langchain_core' 2> /dev/null && have_lc=1
  "$venv/bin/python" -c 'import rivumi_compact' 2> /dev/null && have_pkg=1
  local calls="$OUT/pkg-call-times.txt"
  rm -f "$calls"
  [ -n "$have_pkg" ] && cmds+=("ds_pkg=RIVUMI_BENCH_CALL_TIMES=$calls $venv/bin/python bench/python_batch.py $agents /dev/null 3000"
    "ds_pkg_file=$venv/bin/python bench/python_stream.py file $agents /dev/null 3000"
    "ds_pkg_iter=$venv/bin/python bench/python_stream.py iter $agents /dev/null 3000")
  measure "${cmds[@]}"
  if [ -n "$have_lc" ]; then
    ROUNDS=1 measure "ds_lc=$venv/bin/python bench/langchain_trim.py $agents /dev/null 3000"
  fi
  local rss_a
  rss_a=$(peak_kb "$BIN" run "$agents" --max-total-tokens 3000)
  echo "dataset: $agents, $(( $(stat -c %s "$agents") / 1000000 )) MB, $(wc -l < "$agents") agent trajectories; medians of $ROUNDS interleaved rounds${BEFORE:+, each right after jq} (LangChain 1 round); $(nproc) cores"
  header
  mrow "bare serde_json IgnoredAny parse" ds_bare "1.00" ""
  floors ds
  own ds "read of each row" view1
  # The target column is SPEC 10's (against the one-thread serde floor); #39's SIMD
  # targets are on the line of ratios to every floor.
  mrow "dataset mode, every line compacts" ds_most "$(ratio "${MED[ds_most]}" "${MED[ds_bare]}")" "<= 1.5"
  echo "    ds_most / serde1, round by round: $(round_ratios ds_most ds_bare); / serde1-cpu: $(round_ratios ds_most ds_baren)"
  vs_floors ds ds_most "#39: <= 1.0 simd2"
  mrow "dataset mode, no line compacts" ds_none "$(ratio "${MED[ds_none]}" "${MED[ds_bare]}")" "<= 1.5"
  vs_floors ds ds_none ""
  mrow "python json.loads + json.dumps (vs compacting)" ds_py "$(ratio "${MED[ds_py]}" "${MED[ds_most]}")" ">= 3"
  if [ -n "$have_lc" ]; then
    mrow "langchain trim_messages (vs compacting)" ds_lc "$(ratio "${MED[ds_lc]}" "${MED[ds_most]}")" ">= 15"
  else
    echo "langchain trim_messages: skipped: langchain-core could not be installed into $venv (no network?)"
  fi
  if [ -n "$have_pkg" ]; then
    mrow "python package compact_lines (vs CLI)" ds_pkg "$(ratio "${MED[ds_pkg]}" "${MED[ds_most]}")" "<= 1.5"
    local call
    call=$(python3 -c 'import statistics,sys; print(statistics.median(float(l) for l in open(sys.argv[1])))' "$calls")
    row "python package, the call alone (vs CLI)" "$(secs "$call")" "" "" "$(ratio "$call" "${MED[ds_most]}")" "<= 1.5"
    [ -n "$have_lc" ] && row "langchain trim_messages / python package" "" "" "" "$(ratio "${MED[ds_lc]}" "${MED[ds_pkg]}")" ">= 50"
    mrow "python package compact_file, path to path (vs CLI)" ds_pkg_file "$(ratio "${MED[ds_pkg_file]}" "${MED[ds_most]}")" "<= 1.1"
    [ -n "$have_lc" ] && row "langchain trim_messages / python compact_file" "" "" "" "$(ratio "${MED[ds_lc]}" "${MED[ds_pkg_file]}")" ">= 40"
    mrow "python package iter_file, lines to Python (vs CLI)" ds_pkg_iter "$(ratio "${MED[ds_pkg_iter]}" "${MED[ds_most]}")" "<= 1.1"
    [ -n "$have_lc" ] && row "langchain trim_messages / python iter_file" "" "" "" "$(ratio "${MED[ds_lc]}" "${MED[ds_pkg_iter]}")" ">= 40"
  else
    echo "python package: skipped: pip install ./python failed into $venv"
  fi
  mrow "every line compacts, --jobs 1 (speed-up of 2)" ds_most1 "$(ratio "${MED[ds_most1]}" "${MED[ds_most]}")" ">= 1.7"
  mrow "two one-thread runs on the halves, side by side" ds_halves "$(ratio "${MED[ds_most1]}" "${MED[ds_halves]}")" "(machine)"
  row "peak RSS, every line compacts" "$(( rss_a / 1024 )) MiB" "" "" "" ""
  "$BIN" run "$agents" --max-total-tokens 3000 --jobs 1 > "$OUT/agents-j1.jsonl" 2> /dev/null
  "$BIN" run "$agents" --max-total-tokens 3000 --jobs 2 > "$OUT/agents-j2.jsonl" 2> /dev/null
  echo "dataset outputs with --jobs 1 and --jobs 2: $(cmp -s "$OUT/agents-j1.jsonl" "$OUT/agents-j2.jsonl" && echo identical || echo DIFFERENT)"
  if [ -n "$have_pkg" ]; then
    "$venv/bin/python" bench/python_batch.py "$agents" "$OUT/agents-py.jsonl" 3000 2> /dev/null
    echo "python package output and CLI output: $(cmp -s "$OUT/agents-j1.jsonl" "$OUT/agents-py.jsonl" && echo identical || echo DIFFERENT)"
    for mode in file iter; do
      "$venv/bin/python" bench/python_stream.py "$mode" "$agents" "$OUT/agents-py.jsonl" 3000 2> /dev/null
      echo "python package $mode output and CLI output: $(cmp -s "$OUT/agents-j1.jsonl" "$OUT/agents-py.jsonl" && echo identical || echo DIFFERENT)"
    done
  fi
  if [ -n "$have_lc" ]; then
    for n in 16000 4000; do
      "$BIN" run "$agents" --target-tokens "$n" > "$OUT/agents-fit.jsonl" 2> /dev/null
      "$venv/bin/python" bench/compare_trim.py "$agents" "$OUT/agents-fit.jsonl" "$n"
    done
  fi
  rm -f "$OUT/agents-j1.jsonl" "$OUT/agents-j2.jsonl" "$OUT/agents-py.jsonl" "$OUT/agents-fit.jsonl"
}
if [ "${BENCH_ONLY:-}" = dataset ]; then
  dataset_bench
  exit 0
fi

# The size-to-fit on one row whose retained tail is an assistant message with 80,000
# parallel calls (15 MB), at a target one token below what keeps that group: the fit
# removes or keeps a group whole in one step (issue #40: <= 2x the same row untargeted).
fit_bench() {
  local par="$OUT/parallel-80k.jsonl" at
  [ -f "$par" ] || python3 bench/gen.py parallel "$par" --calls 80000
  at=$(python3 bench/fit_target.py "$BIN" "$par")
  measure "plain=$BIN run $par" "fit=$BIN run $par --target-tokens $(( at - 1 ))"
  echo "one row of $(( $(wc -c < "$par") / 1000000 )) MB, 80,000 parallel calls; the group is kept from --target-tokens $at"
  header
  mrow "run, no target" plain "1.00" ""
  mrow "run --target-tokens $(( at - 1 ))" fit "$(ratio "${MED[fit]}" "${MED[plain]}")" "<= 2"
  echo
}
if [ "${BENCH_ONLY:-}" = fit ]; then
  fit_bench
  exit 0
fi

small="$OUT/step-$(( MB / 10 ))mb.jsonl"
many="$OUT/many-${FILES}"
[ -f "$small" ] || python3 bench/gen.py big "$small" --mb "$(python3 -c "print($MB/10)")"
[ -d "$many" ] || python3 bench/gen.py many "$many" --files "$FILES"
m2="$OUT/many-2000"; m20="$OUT/many-20000"
[ -d "$m2" ] || python3 bench/gen.py many "$m2" --files 2000
[ -d "$m20" ] || python3 bench/gen.py many "$m20" --files 20000
ds1="$OUT/dataset-10k.jsonl"; ds10="$OUT/dataset-100k.jsonl"
[ -f "$ds1" ] || python3 bench/gen.py dataset "$ds1" --lines 10000
[ -f "$ds10" ] || python3 bench/gen.py dataset "$ds10" --lines 100000
# The many-files case measures the tool, not the VM's disk: inputs and outputs go to a
# tmpfs when there is one (BENCH_TMPFS=none keeps them on disk).
FS=${BENCH_TMPFS:-/dev/shm}
if [ "$FS" != none ] && [ -d "$FS" ]; then
  rm -rf "$FS/rivumi-bench"; mkdir -p "$FS/rivumi-bench"; cp -r "$many" "$FS/rivumi-bench/many"
  many="$FS/rivumi-bench/many"; OUTMANY="$FS/rivumi-bench"
else
  OUTMANY="$OUT"
fi

size=$(stat -c %s "$big")
measure "run=$BIN run $big" "bare=$BARE $big" "jq=jq -c . $big" "py=python3 bench/minimal.py $big /dev/null" \
  "step=$BIN run $small" "c_bare2=$BARE --threads 2 $big" "c_baren=$SIMD $big" "c_sonic1=$SIMD --parser sonic $big" \
  "c_sonic2=$SIMD --parser sonic --threads 2 $big" "c_simd1=$SIMD --parser simd-json $big" \
  "c_simd2=$SIMD --parser simd-json --threads 2 $big" "c_scan1=$BARE --parser scan $big"
MED[c_bare]=${MED[bare]}
rss=$(peak_kb "$BIN" run "$big")
rm -rf "$OUTMANY/o1" "$OUTMANY/o2" "$OUTMANY/oa" "$OUTMANY/ob"
"$BIN" run "$many" --out-dir "$OUTMANY/o1" > /dev/null 2>&1   # warm the page cache
# The machine's own two-core figure beside the two-job speed-up: two one-thread runs,
# each on half of the folders, side by side (no coordination at all).
folders=()
for f in "$many"/*/; do [ -d "$f" ] && folders+=("$f"); done
halves_cmd=()
if [ ${#folders[@]} -ge 2 ]; then
  n=$(( ${#folders[@]} / 2 ))
  halves_cmd=("jh=$BIN run ${folders[*]:0:n} --out-dir $OUTMANY/oa --jobs 1 & $BIN run ${folders[*]:n} --out-dir $OUTMANY/ob --jobs 1; wait")
fi
measure "j1=$BIN run $many --out-dir $OUTMANY/o1 --jobs 1" \
  "j2=$BIN run $many --out-dir $OUTMANY/o2 --jobs 2" "${halves_cmd[@]}"
same=$(diff -r "$OUTMANY/o1" "$OUTMANY/o2" > /dev/null && echo identical || echo DIFFERENT)
rss_m2=$(peak_kb "$BIN" run "$m2" --dry-run)
rss_m20=$(peak_kb "$BIN" run "$m20" --dry-run)
rss_ds1=$(peak_kb "$BIN" run "$ds1" --max-total-tokens 3000)
rss_ds10=$(peak_kb "$BIN" run "$ds10" --max-total-tokens 3000)

echo "input: $(( size / 1000000 )) MB, $(wc -l < "$big") lines; $FILES files in $many; medians of $ROUNDS interleaved rounds${BEFORE:+, each right after jq}; $(nproc) cores"
header
# Targets: SPEC 10's in the column; #39's against the SIMD floors on the ratios' line.
mrow "run ($MB MB, fallback applied)" run "$(ratio "${MED[run]}" "${MED[bare]}")" "<= 1.5"
echo "    run / serde1, round by round: $(round_ratios run bare)"
vs_floors c run "#39: <= 0.4 serde1, <= 1.0 simd2"
mrow "bare serde_json IgnoredAny parse" bare "1.00" ""
floors c
own c
mrow "jq -c . (vs run)" jq "$(ratio "${MED[jq]}" "${MED[run]}")" ">= 15"
mrow "python json.loads + write (vs run)" py "$(ratio "${MED[py]}" "${MED[run]}")" ">= 4"
mrow "run, a tenth of the size (10x step)" step "$(ratio "${MED[run]}" "${MED[step]}")" "<= 11"
row "peak RSS / input size" "$(( rss / 1024 )) MiB" "" "" "$(python3 -c "print(f'{$rss*1024/$size:.2f}')")" "<= 1.1"
mrow "$FILES files, --jobs 1" j1 "" ""
mrow "$FILES files, --jobs 2 (speed-up)" j2 "$(ratio "${MED[j1]}" "${MED[j2]}")" ">= 1.8"
if [ ${#halves_cmd[@]} -gt 0 ]; then
  mrow "two one-thread runs on the halves, side by side" jh "$(ratio "${MED[j1]}" "${MED[jh]}")" "(machine)"
else
  echo "two one-thread runs on the halves: skipped ($many has fewer than two folders to split)"
fi
row "batch peak RSS, 2,000 / 20,000 files" "$(( rss_m2 / 1024 ))/$(( rss_m20 / 1024 )) MiB" "" "" "$(ratio "$rss_m20" "$rss_m2")" "~1"
row "dataset mode peak RSS, 10k / 100k lines" "$(( rss_ds1 / 1024 ))/$(( rss_ds10 / 1024 )) MiB" "" "" "$(ratio "$rss_ds10" "$rss_ds1")" "~1"
echo "outputs with --jobs 1 and --jobs 2: $same; many-files run on: ${FS}"
echo
fit_bench
dataset_bench
rm -rf "${FS:?}/rivumi-bench" 2>/dev/null || true
