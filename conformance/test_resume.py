"""Sessions written back with `--output-format claude-code|codex|gemini-cli` resume in the real
agents, and the first request they send is exactly the compacted context (SPEC 13).

Each test records a session with the agent itself (scripted tool calls), writes it
back on one of the two paths (the agent-runner fallback, a conversation checkpoint),
resumes it with a new prompt and compares the request the agent sends with the
compacted context `run` makes of the same session.
"""

import json
import os
import shutil
import unittest

from agents import Claude, Codex, Gemini
from context import (anthropic_units, canonical_context, canonical_units, check_resumed, gemini_units,
                     responses_units, rivumi)

TASK = "Fix the bug in calc.py so that add() adds, and keep notes in notes.txt."
NEXT = "Now also add a sub() function."
MORE = "Keep going: check the notes."
LAST = "Finally, add a mul() function."
COMMANDS = [
    "printf 'def add(a, b):\\n    return a - b\\n' > calc.py; seq 1 2000",
    "cat calc.py; seq 1 1000",
    "python3 -c 'import calc; print(calc.add(2, 2))'",
    "sed -i 's/a - b/a + b/' calc.py",
    "cat calc.py; seq 1 1000",
    "python3 -c 'import calc; print(calc.add(2, 2))'",
    "echo 'add fixed' > notes.txt",
    "ls; seq 1 1500",
]
FALLBACK = ["--runtime", "agent-runner", "--max-total-tokens", "100000"]
CHECKPOINT = ["--runtime", "conversation", "--no-native-compaction", "--manual"]


def claude_usage(total):
    return {"input_tokens": 5, "cache_creation_input_tokens": 300, "cache_read_input_tokens": total - 345,
            "output_tokens": 40}


def codex_usage(total):
    return {"input_tokens": total - 40, "cached_tokens": (total - 40) // 2, "output_tokens": 40}


def gemini_usage(total):
    return {"promptTokenCount": total - 40, "cachedContentTokenCount": (total - 40) // 2, "candidatesTokenCount": 40}


def tool(agent, k, cmd):
    """Agent's shell call for command `cmd` (the k-th of the script), and its usage shape."""
    if agent is Claude:
        return {"name": "Bash", "input": {"command": cmd, "description": f"step {k + 1}"}}, claude_usage
    if agent is Gemini:
        return {"name": "run_shell_command", "input": {"command": cmd}}, gemini_usage
    return {"name": "exec_command", "input": {"cmd": cmd}}, codex_usage


def script(agent, totals, first=0):
    """One tool call per figure of `totals` (the usage that call reports), from command
    `first` on, then an answer."""
    steps = []
    for k, (cmd, total) in enumerate(zip(COMMANDS[first:], totals), first):
        call, usage = tool(agent, k, cmd)
        steps.append({"text": f"Step {k + 1}.", "tool": call, "usage": usage(total)})
    usage = tool(agent, 0, "")[1]
    steps.append({"text": "Fixed: add() now returns a + b.", "usage": usage((totals or [30000])[-1] + 500)})
    return {"steps": steps, "compact": {"text": "<summary>calc.py: add() was fixed; notes written.</summary>",
                                        "usage": usage(20000)}}


# The usage of the resumed call: the size of the compacted context it was sent.
ANSWERS = {agent: {"steps": [{"text": "Resumed; adding sub() next.", "usage": tool(agent, 0, "")[1](30000)}]}
           for agent in (Claude, Codex, Gemini)}
SMALL = [20000 + 2500 * k for k in range(len(COMMANDS))]
# A conversation of three turns (a checkpoint keeps the latest two): the task with
# four calls, then two prompts of two calls each.
TURNS = [(TASK, 0, 4), ("Continue: write the notes.", 4, 6), ("Check the result.", 6, 8)]


class Resume:
    """The checks, shared by both agents (a subclass sets `agent` and `units`)."""

    agent = None
    units = None
    # A usage past the agent's own trigger, for a session with a compaction of its own,
    # reported by the call of that command, in a session of these turns.
    big = 0
    big_at = 3
    own_turns = ((TASK, 0, len(COMMANDS)),)

    def record(self, totals, turns=((TASK, 0, len(COMMANDS)),)):
        """A session the agent records itself: one turn per (prompt, first command, end)."""
        a = self.agent(label="resume")
        self.addCleanup(a.cleanup)
        session = None
        self.compaction_requests = 0
        for prompt, first, end in turns:
            resume = session and self.agent.session_id(session)
            result = a.exec(prompt, script(self.agent, totals[first:end], first), resume=resume).check()
            self.compaction_requests += len(result.compactions())
            session = a.sessions()[-1]
        self.assert_accounted(session)
        return a, session

    def assert_accounted(self, session):
        """What the agent wrote is read whole: every record an item or counted under a
        named reason, none of an unknown type, none taken by no rule (SPEC 13 "formats")."""
        records = json.loads(rivumi("decide", "--json", session).stdout)["records"]
        skipped = records["skipped"]
        self.assertEqual(records["in_items"] + sum(skipped.values()), records["records"], records)
        self.assertNotIn("unknown", skipped, records)
        self.assertNotIn("unaccounted", skipped, records)

    def write_back(self, a, session, flags):
        """Replaces the session file with its written-back form; returns a copy of the
        session as it was."""
        kept = os.path.join(a.dir, os.path.basename(session) + f".before-{len(os.listdir(a.dir))}")
        shutil.copyfile(session, kept)
        out = rivumi("run", kept, "--output-format", self.agent.name, *flags)
        self.assertIn("->", out.stderr)
        self.assertNotIn("no history was replaced", out.stderr, "the write-back compacts")
        with open(session, "w", encoding="utf-8") as f:
            f.write(out.stdout)
        return kept

    def resume_and_check(self, a, session, before, flags, task=TASK, prompt=NEXT):
        result = a.exec(prompt, ANSWERS[self.agent], resume=self.agent.session_id(session)).check()
        steps = result.steps()
        self.assertTrue(steps, f"no request after resume: {result.requests}")
        sent = self.units(steps[0]["body"])
        expected = canonical_units(canonical_context(before, flags))
        problems = check_resumed(sent, expected, prompt, task)
        if problems and os.environ.get("RIVUMI_AGENTS_KEEP") == "1":
            print(f"\n{a.dir}: sent\n" + "\n".join(map(str, sent)) + "\nexpected\n" + "\n".join(map(str, expected)))
        self.assertEqual(problems, [], "\n".join(problems))
        return result

    def run_path(self, turns, flags, task):
        a, session = self.record(SMALL, turns)
        before = self.write_back(a, session, flags)
        self.resume_and_check(a, session, before, flags, task)
        # The session goes on, then a second write-back (a checkpoint: the fallback runs
        # once per transcript) resumes the same way; the checkpoint keeps the last two
        # turns, whose first prompt is then the user's own message in the context.
        a.exec(MORE, script(self.agent, SMALL[6:8], 6), resume=self.agent.session_id(session)).check()
        before = self.write_back(a, session, CHECKPOINT)
        self.resume_and_check(a, session, before, CHECKPOINT, task=NEXT, prompt=LAST)

    def test_fallback(self):
        self.run_path(TURNS, FALLBACK, TASK)

    def test_checkpoint(self):
        # The checkpoint removes the first turn: the user's own message in the context
        # is the prompt of the first turn it keeps.
        self.run_path(TURNS, CHECKPOINT, TURNS[1][0])

    def test_after_the_agents_own_compaction(self):
        totals = list(SMALL)
        totals[self.big_at] = self.big
        a, session = self.record(totals, self.own_turns)
        with open(session, encoding="utf-8") as f:
            text = f.read()
        own = ("compact_boundary", '"type":"compacted"', "Got it. Thanks for the additional context!")
        if self.agent is Gemini and not any(mark in text for mark in own):
            # Gemini CLI before 0.4x compresses but records nothing of it in the session
            # (resumed, it sends the whole history again): its request shows it.
            self.assertGreater(self.compaction_requests, 0, "the agent compacted")
        else:
            self.assertTrue(any(mark in text for mark in own), "the agent compacted")
        before = self.write_back(a, session, FALLBACK)
        # The task is in the agent's own summary now, which the head keeps.
        self.resume_and_check(a, session, before, FALLBACK, task=None)


class ClaudeResume(Resume, unittest.TestCase):
    agent = Claude
    units = staticmethod(anthropic_units)
    big = 980_000


class CodexResume(Resume, unittest.TestCase):
    agent = Codex
    units = staticmethod(responses_units)
    big = 250_000


class GeminiResume(Resume, unittest.TestCase):
    agent = Gemini
    units = staticmethod(gemini_units)
    # Gemini CLI compresses only history before a prompt of the user's: the big figure
    # comes in the second turn, after the first turn's calls.
    big = 600_000
    big_at = 5
    own_turns = TURNS


if __name__ == "__main__":
    unittest.main()
