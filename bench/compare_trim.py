#!/usr/bin/env python3
"""Benchmark (issue #24): a size to fit, against LangChain's trim_messages on the same
rows. Reads the original dataset, the tool's output (--target-tokens N) and trims each
row with trim_messages(max_tokens=N, strategy="last"); prints, for each: rows at or under
N (by the tool's estimate, ceil(bytes/4) per message's text and calls, and by LangChain's
approximate counter), messages kept, rows whose first user message (the task) is kept,
and tool results whose call was dropped.

  compare_trim.py ORIGINAL.jsonl OURS.jsonl N
"""
import json
import sys

from langchain_core.messages import convert_to_messages, convert_to_openai_messages, trim_messages
from langchain_core.messages.utils import count_tokens_approximately


def ours_estimate(messages):
    total = 0
    for m in messages:
        c = m.get("content") or ""
        text = c if isinstance(c, str) else "".join(b.get("text", "") for b in c if isinstance(b, dict))
        n = len(text.encode())
        for call in m.get("tool_calls") or []:
            f = call.get("function", {})
            n += len((f.get("name") or "").encode()) + len((f.get("arguments") or "").encode())
        total += -(-n // 4)
    return total


def facts(rows, original, n):
    at_or_under = sum(ours_estimate(r) <= n for r in rows)
    lc_under = sum(count_tokens_approximately(convert_to_messages(r)) <= n for r in rows)
    kept = sum(len(r) for r in rows) / len(rows)
    task = 0
    orphans = 0
    for r, o in zip(rows, original):
        first_user = next((m["content"] for m in o if m["role"] == "user"), None)
        task += any(m.get("role") == "user" and m.get("content") == first_user for m in r)
        calls = {c["id"] for m in r for c in (m.get("tool_calls") or [])}
        orphans += sum(1 for m in r if m.get("role") == "tool" and m.get("tool_call_id") not in calls)
    return at_or_under, lc_under, kept, task, orphans


original = [json.loads(l)["messages"] for l in open(sys.argv[1], "rb") if l.strip()]
ours = [json.loads(l)["messages"] for l in open(sys.argv[2], "rb") if l.strip()]
n = int(sys.argv[3])
theirs = []
for o in original:
    kept = trim_messages(convert_to_messages(o), max_tokens=n, token_counter=count_tokens_approximately,
                         strategy="last", include_system=True, start_on="human", allow_partial=False)
    theirs.append(convert_to_openai_messages(kept))
print(f"{len(original)} rows, target {n} tokens; originally {sum(ours_estimate(o) <= n for o in original)} at or under it")
print(f"{'':28} {'<= N (ours)':>12} {'<= N (LC)':>10} {'msgs kept':>10} {'task kept':>10} {'orphan results':>15}")
for name, rows in (("rivumi-compact --target-tokens", ours), ("LangChain trim_messages", theirs)):
    a, b, k, t, o = facts(rows, original, n)
    print(f"{name:28} {a:>12} {b:>10} {k:>10.1f} {t:>10} {o:>15}")
