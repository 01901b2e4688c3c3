#!/usr/bin/env python3
"""Compacting a Hugging Face dataset with the Python package: a generated dataset of
agent conversations with tool calls, compacted to a size with `Dataset.map(batched=True)`,
written to Parquet and read back. Run: python3 examples/datasets/hf_parquet.py OUT_DIR
(with `datasets` and `rivumi_compact` installed: pip install datasets ./python)."""
import json
import os
import sys

import datasets

import rivumi_compact as rc


def conversation(k):
    msgs = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": f"Fix issue {k}."}]
    for s in range(k % 12 + 2):
        msgs.append({"role": "assistant", "content": f"Step {s}.", "tool_calls": [
            {"id": f"c{s}", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": f"pytest t{s}.py"})}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{s}", "content": f"{s} passed\n" + "log line\n" * (k % 40 * 20)})
    msgs.append({"role": "assistant", "content": "Done."})
    return msgs


# ---
out = sys.argv[1] if len(sys.argv) > 1 else "out"
os.makedirs(out, exist_ok=True)
ds = datasets.Dataset.from_list([{"id": k, "messages": conversation(k)} for k in range(200)])
# Keep the newest messages that fit in 2,000 tokens with the task and the summary; no
# reminder and no re-anchor block in training data.
fit = rc.dataset_map(fallback__target_tokens=2000, task__max_total_tokens=10**9, inject=["summary"])
compacted = ds.map(fit, batched=True, batch_size=64)
compacted.to_parquet(os.path.join(out, "train.parquet"))
back = datasets.Dataset.from_parquet(os.path.join(out, "train.parquet"))
print(len(back), "rows;", sum(a == "history_fallback" for a in back["rivumi_action"]), "compacted")
print("messages before / after, row 199:", len(ds[199]["messages"]), "/", len(back[199]["messages"]))
