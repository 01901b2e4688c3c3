"""The re-anchor block's facts from what the real agents record when they edit and
verify (SPEC 5, SPEC 13): each agent runs two commands, writes a file with a bug, runs
the check (it fails), fixes the file with its own edit tool and runs the check again
(it passes).
The file on disk shows the agent really did it; `run` must then name the file as
changed and the check as passing, read from the session the agent wrote.

Claude Code edits with its `Write` and `Edit` tools; Codex with `apply_patch` through
`exec_command`, which it intercepts and applies itself (a model without metadata gets
no `apply_patch` tool), and with its own freeform `apply_patch` tool (gpt-5.5 has it).
"""

import json
import os
import unittest

from agents import Claude, Codex
from context import rivumi

TASK = "Create hello.py, check it, and fix it."
VERIFY = "python3 hello.py"
BUGGY = "print('hi')\nraise SystemExit(3)\n"
FIXED = "print('hi')\n"


def claude_usage(total):
    return {"input_tokens": 5, "cache_creation_input_tokens": 300, "cache_read_input_tokens": total - 345,
            "output_tokens": 40}


def codex_usage(total):
    return {"input_tokens": total - 40, "cached_tokens": 0, "output_tokens": 40}


def patch(body):
    return {"name": "exec_command", "input": {"cmd": f"apply_patch <<'EOF'\n*** Begin Patch\n{body}*** End Patch\nEOF\n"}}


def freeform(body):
    """Codex's own `apply_patch` (a freeform tool: the patch is the raw input)."""
    return {"name": "apply_patch", "custom": True, "input": f"*** Begin Patch\n{body}*** End Patch\n"}


def tools(agent, work, patcher=patch):
    if agent is Claude:
        path = os.path.join(work, "hello.py")
        bash = lambda cmd: {"name": "Bash", "input": {"command": cmd, "description": "check"}}
        return [
            bash("seq 1 2000"),
            bash("seq 1 2000"),
            {"name": "Write", "input": {"file_path": path, "content": BUGGY}},
            bash(VERIFY),
            {"name": "Edit", "input": {"file_path": path, "old_string": "raise SystemExit(3)\n", "new_string": ""}},
            bash(VERIFY),
        ]
    shell = lambda cmd: {"name": "exec_command", "input": {"cmd": cmd}}
    return [
        shell("seq 1 2000"),
        shell("seq 1 2000"),
        patcher("*** Add File: hello.py\n" + "".join("+" + line + "\n" for line in BUGGY.splitlines())),
        shell(VERIFY),
        patcher("*** Update File: hello.py\n@@\n print('hi')\n-raise SystemExit(3)\n"),
        shell(VERIFY),
    ]


def until_result(lines, n):
    """The session's lines up to its `n`-th tool result (Claude Code: a user record
    holding a `tool_result` block; Codex: a function or custom tool's output)."""
    seen = 0
    for k, line in enumerate(lines):
        r = json.loads(line)
        content = (r.get("message") or {}).get("content")
        claude = r.get("type") == "user" and isinstance(content, list) and any(
            b.get("type") == "tool_result" for b in content if isinstance(b, dict))
        codex = (r.get("payload") or {}).get("type") in ("function_call_output", "custom_tool_call_output")
        seen += claude or codex
        if seen == n:
            return lines[: k + 1]
    raise AssertionError(f"the session has fewer than {n} tool results")


def section(text, title):
    """The `- item` lines under a re-anchor heading."""
    lines = text.splitlines()
    start = lines.index(title + ":") + 1
    out = []
    for line in lines[start:]:
        if not line.startswith("- "):
            break
        out.append(line[2:])
    return out


class Reanchor:
    agent = None
    # Codex only: how it patches (through `exec_command`, or its own freeform tool for a
    # model it knows).
    patcher = staticmethod(patch)
    model = None

    def make(self, label):
        a = self.agent(label=label, model=self.model) if self.model else self.agent(label=label)
        self.addCleanup(a.cleanup)
        return a

    def test_the_agents_edit_and_check_are_facts(self):
        a = self.make("reanchor")
        usage = claude_usage if self.agent is Claude else codex_usage
        steps = [{"text": f"Step {k + 1}.", "tool": t, "usage": usage(20000 + 3000 * k)}
                 for k, t in enumerate(tools(self.agent, a.work, self.patcher))]
        steps.append({"text": "Fixed.", "usage": usage(40000)})
        args = ["--allowedTools", "Write,Edit,Read"] if self.agent is Claude else []
        a.exec(TASK, {"steps": steps}, args=args).check()
        with open(os.path.join(a.work, "hello.py"), encoding="utf-8") as f:
            self.assertEqual(f.read(), FIXED, "the agent did not make the edits it was given")
        session = a.sessions()[-1]
        out = rivumi("run", session, "--runtime", "agent-runner", "--max-total-tokens", "30000",
                     "--verify", VERIFY, "--emit", "reanchor").stdout
        self.assertEqual(section(out, "Changed files (most recent first)"), ["hello.py"], out)
        self.assertIn(f"Check status: pass (`{VERIFY}`)", out)
        # The same session cut after the failing check (the fourth result): the file is
        # changed already, and the check failed.
        cut = os.path.join(a.dir, "cut.jsonl")
        with open(session, encoding="utf-8") as f, open(cut, "w", encoding="utf-8") as w:
            w.writelines(until_result(f.readlines(), 4))
        out = rivumi("run", cut, "--input-format", self.agent.name, "--runtime", "agent-runner",
                     "--max-total-tokens", "30000", "--verify", VERIFY, "--emit", "reanchor").stdout
        self.assertEqual(section(out, "Changed files (most recent first)"), ["hello.py"], out)
        self.assertRegex(out, r"Check status: fail \((exit code 3|error), `python3 hello.py`\)")


    def test_what_did_not_happen_is_no_change_and_a_failed_check_fails(self):
        """A patch of a file that is not there, a tool the agent refuses (Codex), a plan
        it refuses (Codex 0.171 has no `update_plan`, Claude Code 2.1.332 in `-p` no
        `TodoWrite`), and a check that exits 1: no file changed, no remaining steps, the
        check failed."""
        a = self.make("refused")
        usage = claude_usage if self.agent is Claude else codex_usage
        missing = os.path.join(a.work, "missing.py")
        if self.agent is Claude:
            bash = lambda cmd: {"name": "Bash", "input": {"command": cmd, "description": "run"}}
            calls = [bash("seq 1 2000"), bash("seq 1 2000"),
                     {"name": "Edit", "input": {"file_path": missing, "old_string": "x", "new_string": "y"}},
                     {"name": "TodoWrite", "input": {"todos": [
                         {"content": "open a PR", "status": "pending", "activeForm": "Opening a PR"}]}},
                     bash("false")]
        else:
            shell = lambda cmd: {"name": "exec_command", "input": {"cmd": cmd}}
            calls = [shell("seq 1 2000"), shell("seq 1 2000"),
                     self.patcher("*** Update File: missing.py\n@@\n-x\n+y\n"),
                     {"name": "write_file", "input": {"path": "ghost.py", "content": "x\n"}},
                     {"name": "update_plan", "input": {"plan": [{"step": "open a PR", "status": "pending"}]}},
                     shell("false")]
        steps = [{"text": f"Step {k + 1}.", "tool": t, "usage": usage(20000 + 3000 * k)} for k, t in enumerate(calls)]
        steps.append({"text": "Stopped.", "usage": usage(40000)})
        args = ["--allowedTools", "Edit,Read"] if self.agent is Claude else []
        a.exec(TASK, {"steps": steps}, args=args).check()
        self.assertFalse(os.path.exists(missing) or os.path.exists(os.path.join(a.work, "ghost.py")))
        out = rivumi("run", a.sessions()[-1], "--runtime", "agent-runner", "--max-total-tokens", "30000",
                     "--verify", "false", "--emit", "reanchor").stdout
        self.assertIn("Changed files (most recent first):\n- none recorded\n", out)
        self.assertIn("Remaining steps:\n- none recorded\n", out)
        self.assertRegex(out, r"Check status: fail \((exit code 1|error), `false`\)")


class ClaudeReanchor(Reanchor, unittest.TestCase):
    agent = Claude


class CodexReanchor(Reanchor, unittest.TestCase):
    agent = Codex


class CodexFreeformReanchor(Reanchor, unittest.TestCase):
    agent = Codex
    model = "gpt-5.5"
    patcher = staticmethod(freeform)


if __name__ == "__main__":
    unittest.main()
