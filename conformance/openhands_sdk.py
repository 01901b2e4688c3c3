#!/usr/bin/env python3
"""Runs the OpenHands agent SDK (V1) offline against a scripted model server on
127.0.0.1, then checks what rivumi-compact reads from the conversation it saved against
what the SDK sent its model.

Not part of the suite: the SDK (`pip install openhands-sdk openhands-tools`) needs
Python 3.12 or later, which the CI machine does not have. Run it where the SDK imports:

    python3 conformance/openhands_sdk.py --binary target/release/rivumi-compact [--keep DIR]

It runs three conversations in a private folder (HOME included): one without a
condenser (a shell call, a file created, two calls in one response, a failed check, an
edit, a task plan, a passing check, an unknown tool, `finish`, a second user message),
the same with `LLMSummarizingCondenser(max_size=8, keep_first=2)`, which condenses the
history twice, and the same in confirmation mode with its first action rejected by the
user (`UserRejectObservation`). For each it checks that:
- every tool result and call the model was sent is the one rivumi-compact reads
  (texts, names, arguments);
- the context after each condensation (the request after the condenser's own) is the
  context rivumi-compact restates after that compaction (adjacent user messages, which
  the SDK sends as one, joined);
- the usage read is the agent's accumulated usage in the conversation's state.
Exit 0 when all hold, 1 with the differences otherwise.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def text(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


class Script:
    """The model's answers: a step counter over the agent's requests (the condenser's,
    which offer no tools, get a summary)."""

    def __init__(self, work):
        self.work, self.step, self.calls, self.bodies = work, 0, 0, []
        self.lock = threading.Lock()

    def answer(self, body):
        with self.lock:
            self.bodies.append(body)
            self.calls += 1
            k = self.calls
            msg = {"role": "assistant", "content": None}
            if not body.get("tools"):
                msg["content"] = "SUMMARY: a.txt written; b.py created and fixed; the check passes."
                return k, msg
            msgs = body["messages"]
            last_user = text(msgs[max(i for i, m in enumerate(msgs) if m["role"] == "user")].get("content"))
            if last_user.endswith("Thanks."):
                msg["content"] = "You are welcome."
                return k, msg
            w, s = self.work, self.step
            self.step += 1

            def call(i, name, args):
                return {"id": f"call_{k}_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}

            check = f"cd {w} && python3 -c 'import b; assert b.f() == 2'"
            steps = [
                ("I will write the file first.", [("terminal", {"command": f"echo hello > {w}/a.txt && cat {w}/a.txt"})]),
                ("", [("file_editor", {"command": "create", "path": f"{w}/b.py",
                                       "file_text": "def f():\n    return 1\n" + "# padding line\n" * 100})]),
                ("Two things at once.", [("terminal", {"command": check}), ("file_editor", {"command": "view", "path": f"{w}/b.py"})]),
                ("", [("file_editor", {"command": "str_replace", "path": f"{w}/b.py", "old_str": "return 1", "new_str": "return 2"})]),
                ("", [("task_tracker", {"command": "plan", "task_list": [
                    {"title": "Fix b.f", "notes": "", "status": "done"}, {"title": "Report", "notes": "", "status": "todo"}]})]),
                ("", [("terminal", {"command": check + " && echo OK"})]),
                ("", [("no_such_tool", {"x": 1})]),
                ("", [("finish", {"message": "b.f now returns 2; the check passes."})]),
            ]
            thought, calls = steps[min(s, len(steps) - 1)]
            msg["content"] = thought or None
            msg["tool_calls"] = [call(i, n, a) for i, (n, a) in enumerate(calls)]
            return k, msg


def serve(script):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            k, msg = script.answer(body)
            out = {"id": f"chatcmpl-{k}", "object": "chat.completion", "created": 1764500000 + k,
                   "model": body.get("model"),
                   "choices": [{"index": 0, "message": msg,
                                "finish_reason": "tool_calls" if msg.get("tool_calls") else "stop"}],
                   "usage": {"prompt_tokens": 1000 * k + 37, "completion_tokens": 20 + k,
                             "total_tokens": 1000 * k + 57 + k,
                             "prompt_tokens_details": {"cached_tokens": 500 * (k - 1)}}}
            data = json.dumps(out).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


AGENT = r'''
import os, sys
from pydantic import SecretStr
from openhands.sdk import LLM, Agent, Conversation, Tool
from openhands.sdk.context.condenser import LLMSummarizingCondenser
from openhands.tools.terminal import TerminalTool
from openhands.tools.file_editor import FileEditorTool
from openhands.tools.task_tracker import TaskTrackerTool
from openhands.sdk.security.confirmation_policy import AlwaysConfirm, NeverConfirm
port, persist, work, mode = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
condense = mode == "condensed"
llm = LLM(usage_id="agent", model="openai/scripted-model", base_url=f"http://127.0.0.1:{port}/v1",
          api_key=SecretStr("none"), num_retries=0)
extra = {}
if condense:
    extra["condenser"] = LLMSummarizingCondenser(llm=llm.model_copy(update={"usage_id": "condenser"}),
                                                 max_size=8, keep_first=2)
agent = Agent(llm=llm, tools=[Tool(name=TerminalTool.name), Tool(name=FileEditorTool.name),
                              Tool(name=TaskTrackerTool.name)], **extra)
conv = Conversation(agent=agent, workspace=work, persistence_dir=persist, max_iteration_per_run=30)
if mode == "rejected":
    conv.set_confirmation_policy(AlwaysConfirm())
conv.send_message("Create a.txt saying hello, then b.py whose f() returns 2, and check it.")
conv.run()
if mode == "rejected":
    # The first action waits for confirmation: the user rejects it, then lets the rest run.
    conv.reject_pending_actions("Do not write files there.")
    conv.set_confirmation_policy(NeverConfirm())
    conv.run()
conv.send_message("Thanks.")
conv.run()
print(conv.state.persistence_dir)
'''


def check(binary, folder, bodies):
    problems = []
    out = subprocess.run([binary, "run", str(folder), "--max-total-tokens", "1000000000"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return [f"rivumi-compact run failed: {out.stderr}"]
    canon = [json.loads(line) for line in out.stdout.splitlines()]
    results = {r["call_id"]: text(r["content"]) for r in canon if r["type"] == "tool_result"}
    calls = {c["id"]: (c["name"], c["arguments"]) for r in canon if r["type"] == "message"
             for c in r.get("tool_calls") or []}
    for b in bodies:
        for m in b["messages"]:
            if m["role"] == "tool" and results.get(m.get("tool_call_id")) != text(m["content"]):
                problems.append(f"result {m.get('tool_call_id')}: sent {text(m['content'])[:120]!r}, "
                                f"read {results.get(m.get('tool_call_id'), '')[:120]!r}")
            for c in m.get("tool_calls") or []:
                want = (c["function"]["name"], json.loads(c["function"]["arguments"]))
                if calls.get(c["id"]) != want:
                    problems.append(f"call {c['id']}: sent {want}, read {calls.get(c['id'])}")
    after = [bodies[i + 1] for i in range(len(bodies) - 1)
             if not bodies[i].get("tools") and bodies[i + 1].get("tools")]
    marks = [i for i, r in enumerate(canon) if r.get("name") == "compaction_completed"]
    if len(after) != len(marks):
        problems.append(f"{len(after)} condensations sent, {len(marks)} compactions read")
    for n, (req, at) in enumerate(zip(after, marks), 1):
        got = []
        for r in canon[at + 1:]:
            if r["type"] == "event" or (r["type"] == "message" and r["role"] == "assistant" and "~c" not in r["id"]):
                break
            role = "tool" if r["type"] == "tool_result" else r["role"]
            if got and role == "user" and got[-1][0] == "user":
                got[-1] = ("user", got[-1][1] + "\n" + text(r["content"]))
            else:
                got.append((role, text(r["content"])))
        want = [(m["role"], text(m.get("content"))) for m in req["messages"]]
        if got != want:
            problems.append(f"context after condensation {n}: read {[g[0] for g in got]}, sent {[w[0] for w in want]}")
    state = json.loads((folder / "base_state.json").read_text())
    acc = state["stats"]["usage_to_metrics"]["agent"]["accumulated_token_usage"]
    decided = json.loads(subprocess.run([binary, "decide", "--json", str(folder), "--max-total-tokens", "1000000000"],
                                        capture_output=True, text=True).stdout)
    if decided["used"] != acc["prompt_tokens"] + acc["completion_tokens"]:
        problems.append(f"used {decided['used']}, the agent's accumulated usage "
                        f"{acc['prompt_tokens'] + acc['completion_tokens']}")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default="target/release/rivumi-compact")
    ap.add_argument("--keep", help="keep the conversations and request bodies in this folder")
    args = ap.parse_args()
    binary = str(Path(args.binary).resolve())
    root = Path(args.keep).resolve() if args.keep else Path(tempfile.mkdtemp(prefix="openhands-sdk-"))
    failed = False
    for name in ("plain", "condensed", "rejected"):
        base = root / name
        work = base / "work"
        work.mkdir(parents=True, exist_ok=True)
        script = Script(str(work))
        server = serve(script)
        env = {"HOME": str(base / "home"), "PATH": os.environ.get("PATH", ""), "OPENHANDS_SUPPRESS_BANNER": "1"}
        run = subprocess.run([sys.executable, "-c", AGENT, str(server.server_port), str(base / "conversations"),
                              str(work), name], capture_output=True, text=True, env=env,
                             timeout=600)
        server.shutdown()
        if run.returncode != 0:
            print(f"{name}: the SDK failed:\n{run.stderr[-2000:]}")
            return 1
        folder = Path(run.stdout.strip().splitlines()[-1])
        (base / "bodies.jsonl").write_text("".join(json.dumps(b) + "\n" for b in script.bodies))
        problems = check(binary, folder, script.bodies)
        print(f"{name}: {len(script.bodies)} requests, {folder}: " + ("ok" if not problems else f"{len(problems)} problem(s)"))
        for p in problems[:20]:
            print("  " + p)
        failed |= bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
