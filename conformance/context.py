"""What a request sends, and what the compacted context should be, as comparable units.

A *unit* is `(role, kind, value)`: `("user", "text", "…")`, `("assistant", "call",
call_id)`, `("user", "result", call_id)`. Consecutive texts of one role are joined
(the agents split and join text blocks their own ways), blank texts are dropped, and
what the agent adds by itself on every request (its system prompt and environment
reminders, Claude Code's "No response requested." between two user messages) is left
out, so that the two sides compare the history only.
"""

import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

SUMMARY = "[rivumi] History summary fallback."
REANCHOR = "[rivumi] Re-anchor"
REMINDER = "[rivumi] Token budget pressure"
OURS = ("[rivumi]",)


def binary():
    """The rivumi-compact to test: $RIVUMI_COMPACT, else the one `cargo test` built."""
    return os.environ.get("RIVUMI_COMPACT") or os.path.join(ROOT, "target", "debug", "rivumi-compact")


def rivumi(*args, check=True):
    p = subprocess.run([binary(), *args], capture_output=True, text=True, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError(f"rivumi-compact {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return p


def agent_noise(role, text):
    t = text.strip()
    return (
        not t
        or t.startswith("<system-reminder>")
        or t.startswith("<environment_context>")
        or t.startswith("<session_context>")
        # The instructions Codex sends as user messages (AGENTS.md, skills): read as
        # developer messages.
        or t.startswith("# AGENTS.md instructions")
        or t.startswith(("<user_instructions>", "<skills_instructions>", "<apps_instructions>",
                         "<collaboration_mode>", "<personality_spec>"))
        # Gemini CLI's setup context before it was wrapped (versions before 0.2x), and its
        # fixed reply to it.
        or t.startswith("This is the Gemini CLI. We are setting up the context for our chat.")
        or (role == "assistant" and t == "Got it. Thanks for the context!")
        or (role == "assistant" and t == "No response requested.")
    )


def call_id(value):
    """A call id as both sides name it: Gemini CLI records `<tool>__<id>` for the call
    it sends as `<id>`."""
    return (value or "").split("__", 1)[-1]


def join(units):
    """Joins consecutive texts of one role, but never one of this tool's with another."""
    out = []
    ours = lambda u: u[1] in ("text", "ours") and u[2].lstrip().startswith(OURS) or u[1] == "ours"
    for u in units:
        if u[1] == "text" and out and out[-1][1] == "text" and out[-1][0] == u[0] and not ours(u) and not ours(out[-1]):
            out[-1] = (u[0], "text", out[-1][2] + "\n" + u[2])
        else:
            out.append(u)
    return [(r, k, v.strip() if k == "text" else v) for r, k, v in out]


def anthropic_units(body):
    units = []
    for m in body["messages"]:
        role = m["role"]
        if role == "system":
            continue
        blocks = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        for b in blocks:
            if b.get("type") == "text" and not agent_noise(role, b["text"]):
                units.append((role, "text", b["text"]))
            elif b.get("type") == "tool_use":
                units.append(("assistant", "call", b["id"]))
            elif b.get("type") == "tool_result":
                units.append(("user", "result", b["tool_use_id"]))
    return join(units)


def responses_units(body):
    units = []
    for item in body["input"]:
        kind = item.get("type")
        if kind == "message":
            role = item["role"]
            if role in ("developer", "system"):
                continue
            for part in item.get("content") or []:
                text = part.get("text")
                if isinstance(text, str) and not agent_noise(role, text):
                    units.append((role, "text", text))
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            units.append(("assistant", "call", item["call_id"]))
        elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            units.append(("user", "result", item["call_id"]))
    return join(units)


def gemini_units(body):
    units = []
    for content in body["contents"]:
        role = "assistant" if content.get("role") == "model" else "user"
        for part in content.get("parts") or []:
            if isinstance(part.get("text"), str) and not part.get("thought"):
                if not agent_noise(role, part["text"]):
                    units.append((role, "text", part["text"]))
            elif "functionCall" in part:
                units.append(("assistant", "call", call_id(part["functionCall"].get("id"))))
            elif "functionResponse" in part:
                units.append(("user", "result", call_id(part["functionResponse"].get("id"))))
    return join(units)


def canonical_context(session, flags):
    """The compacted context `run` makes of a session, as canonical records: the items
    from the start of the current context (after the latest completed compaction, or
    at the latest checkpoint) on."""
    out = rivumi("run", session, *flags, "--emit", "transcript").stdout
    records = [json.loads(line) for line in out.splitlines() if line.strip()]
    start = 0
    for k, r in enumerate(records):
        if r.get("type") == "event" and r.get("name") == "compaction_completed":
            start = k + 1
        if r.get("synthetic") == "checkpoint":
            start = k
    return [r for r in records[start:] if r.get("type") in ("message", "tool_result")]


def canonical_units(records):
    """Units of canonical items; an injected record is `(role, "ours", kind)`."""
    units = []
    for r in records:
        if r.get("synthetic"):
            units.append(("user", "ours", r.get("content") or ""))
        elif r["type"] == "tool_result":
            units.append(("user", "result", call_id(r["call_id"])))
        elif r["role"] in ("system", "developer"):
            continue
        else:
            c = r.get("content")
            texts = [c] if isinstance(c, str) else [b.get("text", "") for b in c or []]
            for t in texts:
                if not agent_noise(r["role"], t):
                    units.append((r["role"], "text", t))
            for call in r.get("tool_calls") or []:
                units.append(("assistant", "call", call_id(call["id"])))
    return join(units)


def check_resumed(request_units, expected, new_prompt, task):
    """Asserts that the first request after resuming is exactly the compacted context:
    the kept units in order with the summary where the removed span was, the summary
    and the re-anchor block once each, nothing twice, the task as the user's own
    message, the new prompt last. Returns a list of problems (empty when it holds)."""
    problems = []
    ours = [u for u in request_units if u[1] == "text" and u[2].startswith(OURS)]
    history = [u for u in request_units if not (u[1] == "text" and u[2].startswith(OURS))]
    kept = [u for u in expected if u[1] != "ours"]
    if not history or history[-1] != ("user", "text", new_prompt):
        problems.append(f"the new prompt is not last: {history[-1:]}")
    else:
        history = history[:-1]
    if history != kept:
        problems.append("the history sent is not the compacted context:\n  sent     "
                        + "\n           ".join(map(str, history)) + "\n  expected "
                        + "\n           ".join(map(str, kept)))
    sent_text = "\n".join(u[2] for u in ours)
    planned = "\n".join(u[2] for u in expected if u[1] == "ours")
    header = SUMMARY  # the fallback and a checkpoint share the summary's renderer
    for marker in (SUMMARY, REANCHOR, REMINDER):
        if sent_text.count(marker) != planned.count(marker):
            problems.append(f"{marker!r} sent {sent_text.count(marker)} times, planned {planned.count(marker)}")
    if planned.count(SUMMARY) == 0:
        problems.append("the plan replaced nothing")
    # The summary where the removed span was: after as many kept units as the plan puts
    # before it.
    before = next((k for k, u in enumerate(expected) if u[1] == "ours"), None)
    at = next((k for k, u in enumerate(request_units) if u[1] == "text" and header in u[2]), None)
    if before is not None and at is not None:
        sent_before = len([u for u in request_units[:at] if not (u[1] == "text" and u[2].startswith(OURS))])
        if sent_before != before:
            problems.append(f"the summary comes after {sent_before} kept units, expected {before}")
    ids = [u for u in request_units if u[1] in ("call", "result")]
    if len(ids) != len(set(ids)):
        problems.append("a call or result is sent twice")
    if task is not None and ("user", "text", task) not in [(r, k, v) for r, k, v in history] and not any(
            r == "user" and k == "text" and task in v and not v.startswith(OURS) for r, k, v in history):
        problems.append(f"the task {task!r} is not sent as the user's own message")
    return problems
