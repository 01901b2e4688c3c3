"""What the agents print when run headless — `claude -p --output-format stream-json`,
`codex exec --json`, `gemini -p --output-format stream-json`, the record CI jobs keep of
a run — is read whole (SPEC 13 "formats"): every record an item or counted under a named
reason, none unknown, every call of the script with its result; and it is never written
back (the agent resumes its session file, not this).
"""

import json
import os
import unittest

from agents import Claude, Codex, Gemini
from context import rivumi
from test_resume import SMALL, TASK, script

ARGS = {
    Claude: ["--output-format", "stream-json", "--verbose"],
    Codex: ["--json"],
    Gemini: ["--output-format", "stream-json"],
}
CALLS = 3


class Outputs(unittest.TestCase):
    def check(self, agent):
        a = agent(label="output")
        self.addCleanup(a.cleanup)
        result = a.exec(TASK, script(agent, SMALL[:CALLS]), args=ARGS[agent]).check()
        path = os.path.join(a.dir, "output.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            f.write(result.stdout)
        decided = json.loads(rivumi("decide", "--json", path).stdout)
        self.assertEqual(decided["input_format"], agent.name, decided)
        records = decided["records"]
        skipped = records["skipped"]
        self.assertEqual(records["in_items"] + sum(skipped.values()), records["records"], records)
        self.assertNotIn("unknown", skipped, records)
        self.assertNotIn("unaccounted", skipped, records)
        out = rivumi("run", path, "--emit", "transcript").stdout
        items = [json.loads(line) for line in out.splitlines() if line.strip()]
        calls = [c["id"] for i in items for c in i.get("tool_calls") or []]
        results = [i["call_id"] for i in items if i.get("type") == "tool_result"]
        self.assertEqual(len(calls), CALLS, items)
        self.assertEqual(sorted(calls), sorted(results), "every call with its result")
        refused = rivumi("run", path, "--output-format", agent.name, "--max-total-tokens", "100", check=False)
        self.assertEqual(refused.returncode, 2, refused.stderr)

    def test_claude_code_stream_json(self):
        self.check(Claude)

    def test_codex_exec_json(self):
        self.check(Codex)

    def test_gemini_cli_stream_json(self):
        self.check(Gemini)


if __name__ == "__main__":
    unittest.main()
