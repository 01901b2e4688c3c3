#!/usr/bin/env python3
"""Generates realistic canonical transcripts for the benchmark, with a fixed seed.

    gen.py big OUT.jsonl --mb 150        one large session (about 7.5 KB per turn)
    gen.py many OUT_DIR --files 10000    small sessions of 5-50 KB each
    gen.py dataset OUT.jsonl --lines N   OpenAI-format conversations, one per line
    gen.py agents OUT.jsonl --lines N    OpenAI-format agent trajectories with tool calls
                                         (about 30 KB each, as SWE-style datasets hold)

Tool results carry code-like text with escapes (newlines, quotes, tabs, non-ASCII),
assistant messages carry usage, and the budget is set so the fallback is applied.
"""
import json
import os
import random
import sys

WORDS = ("fn let mut self return match impl struct enum pub use crate super where async await "
         "Ok Err Some None vec String usize u64 i32 bool true false if else for in while loop "
         "config transcript item boundary decision reanchor summary journal token usage").split()
TOOLS = [("bash", "command"), ("read_file", "path"), ("edit_file", "path"), ("apply_patch", "input")]


def code_block(rng, n_bytes):
    lines, size = [], 0
    while size < n_bytes:
        indent = "    " * rng.randint(0, 3)
        line = indent + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
        if rng.random() < 0.1:
            line += ' // "quoted" é ü → ✓'
        if rng.random() < 0.05:
            line += "\t\\ backslash"
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def session(rng, turns, result_bytes, budget_ratio=1.2):
    out, total = [], 0
    out.append(None)  # session record, filled in at the end
    out.append({"type": "message", "id": "sys", "turn": "t0", "role": "system", "content": "You are a coding agent."})
    out.append({"type": "message", "id": "task", "turn": "t0", "role": "user", "content": "Fix the failing tests in the parser module."})
    context = 500
    for t in range(1, turns + 1):
        turn = f"t{t}"
        if t % 7 == 0:
            out.append({"type": "message", "id": f"u{t}", "turn": turn, "role": "user", "content": "Continue; " + code_block(rng, 120)})
        name, key = rng.choice(TOOLS)
        path = f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.rs"
        arg = {"command": f"cargo test -p {rng.choice(WORDS)}"} if key == "command" else (
            {"path": path} if key == "path" else {"input": f"*** Begin Patch\n*** Update File: {path}\n@@\n-{code_block(rng, 80)}\n+{code_block(rng, 80)}\n*** End Patch"})
        size = rng.randint(result_bytes // 2, result_bytes * 3 // 2)
        context = min(context + size // 4 + 60, 150_000)
        usage = {"input_tokens": 40, "cache_read_tokens": context, "output_tokens": rng.randint(20, 400)}
        total += sum(usage.values())
        out.append({"type": "message", "id": f"a{t}", "turn": turn, "role": "assistant", "content": "Next: " + " ".join(rng.choice(WORDS) for _ in range(12)),
                    "tool_calls": [{"id": f"c{t}", "name": name, "arguments": arg}], "usage": usage})
        res = {"type": "tool_result", "id": f"r{t}", "turn": turn, "call_id": f"c{t}", "name": name, "content": code_block(rng, size)}
        if rng.random() < 0.1:
            res["is_error"], res["exit_code"] = True, 101
        out.append(res)
    out[0] = {"type": "session", "id": "bench", "task": {"max_total_tokens": int(total / budget_ratio)}, "verification": ["cargo test"]}
    return out


def agent_line(rng, i):
    """One agent trajectory in the chat format: a task, then steps of an assistant call
    (with a thought, JSON-string arguments) and its tool result."""
    msgs = [{"role": "system", "content": "You are an autonomous coding agent. " + code_block(rng, 400)},
            {"role": "user", "content": f"Task {i}: " + code_block(rng, 300)}]
    for t in range(rng.randint(8, 40)):
        tool, key = rng.choice(TOOLS)
        arg = f"src/mod_{rng.randint(0, 50)}.rs" if key == "path" else code_block(rng, 120)
        msgs.append({"role": "assistant", "content": code_block(rng, 80),
                     "tool_calls": [{"id": f"call_{t}", "type": "function",
                                     "function": {"name": tool, "arguments": json.dumps({key: arg})}}]})
        msgs.append({"role": "tool", "tool_call_id": f"call_{t}", "content": code_block(rng, rng.randint(200, 1400))})
    msgs.append({"role": "assistant", "content": "Done: " + code_block(rng, 100)})
    return {"id": f"traj-{i}", "messages": msgs}


def write(path, records):
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n")


def main():
    kind, out = sys.argv[1], sys.argv[2]
    rng = random.Random(20261202)
    if kind == "big":
        mb = float(sys.argv[sys.argv.index("--mb") + 1]) if "--mb" in sys.argv else 150
        turns = int(20000 * mb / 150)
        write(out, session(rng, turns, 7000))
    elif kind == "many":
        n = int(sys.argv[sys.argv.index("--files") + 1]) if "--files" in sys.argv else 10000
        os.makedirs(out, exist_ok=True)
        for i in range(n):
            sub = os.path.join(out, f"{i // 1000:02}")
            os.makedirs(sub, exist_ok=True)
            write(os.path.join(sub, f"s{i:05}.jsonl"), session(rng, rng.randint(3, 25), 400))
    elif kind == "dataset":
        n = int(sys.argv[sys.argv.index("--lines") + 1]) if "--lines" in sys.argv else 10000
        with open(out, "w", encoding="utf-8") as f:
            for _ in range(n):
                msgs = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": code_block(rng, 200)}]
                for t in range(rng.randint(2, 12)):
                    msgs.append({"role": "assistant", "content": "", "tool_calls": [{"id": f"call_{t}", "type": "function",
                                 "function": {"name": "bash", "arguments": json.dumps({"command": "pytest -q"})}}]})
                    msgs.append({"role": "tool", "tool_call_id": f"call_{t}", "content": code_block(rng, 600)})
                msgs.append({"role": "assistant", "content": "Done."})
                f.write(json.dumps({"messages": msgs}, ensure_ascii=False, separators=(",", ":")) + "\n")
    elif kind == "agents":
        n = int(sys.argv[sys.argv.index("--lines") + 1]) if "--lines" in sys.argv else 10000
        with open(out, "w", encoding="utf-8") as f:
            for i in range(n):
                f.write(json.dumps(agent_line(rng, i), ensure_ascii=False, separators=(",", ":")) + "\n")
    elif kind == "parallel":
        # One dataset row whose retained tail is one assistant message with N parallel
        # calls and their N results (issue #40: the fit must drop or keep that group in
        # one step, never one item per round).
        n = int(sys.argv[sys.argv.index("--calls") + 1]) if "--calls" in sys.argv else 80000
        msgs = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Check every file."}]
        for t in range(20):
            msgs.append({"role": "assistant", "content": f"Step {t}.", "tool_calls": [{"id": f"old_{t}", "type": "function",
                         "function": {"name": "bash", "arguments": json.dumps({"command": f"ls dir{t}"})}}]})
            msgs.append({"role": "tool", "tool_call_id": f"old_{t}", "content": code_block(rng, 2000)})
        calls = [{"id": f"p_{k}", "type": "function", "function": {"name": "read_file",
                  "arguments": json.dumps({"path": f"src/m{k % 97}/f{k}.rs"})}} for k in range(n)]
        msgs.append({"role": "assistant", "content": "Reading all of them at once.", "tool_calls": calls})
        for k in range(n):
            msgs.append({"role": "tool", "tool_call_id": f"p_{k}", "content": f"fn f{k}() {{}} // {k % 1000:03}"})
        msgs.append({"role": "assistant", "content": "Done."})
        with open(out, "w", encoding="utf-8") as f:
            f.write(json.dumps({"messages": msgs}, ensure_ascii=False, separators=(",", ":")) + "\n")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
