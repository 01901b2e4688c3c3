"""Where the real agents compact by themselves, and the profiles held to it (SPEC 12, 13).

For each agent, two models or windows: the harness bisects over the usage its scripted
model reports until it finds the smallest figure at which the agent compacts, then
replays the two sessions on either side of it with the agent's profile. Replay must
fire at the model call after which the agent compacted, and never in the session where
it did not; its figure must be within 0.1% of Claude Code's recorded `preTokens` (Codex
records none: its limit is the figure).

The findings are written to target/agents/triggers.json (the README's table).
"""

import json
import os
import tempfile
import unittest

from agents import TARGET, Claude, Codex, versions
from context import rivumi
from triggers import GeminiProbe, Probe, pre_tokens

FINDINGS = os.path.join(TARGET, "triggers.json")


def replay(session, *flags):
    out = rivumi("replay", session, "--json", *flags).stdout
    lines = [json.loads(line) for line in out.splitlines()]
    return lines[:-1], lines[-1]


class Triggers(unittest.TestCase):
    findings = []

    @classmethod
    def tearDownClass(cls):
        os.makedirs(TARGET, exist_ok=True)
        with open(FINDINGS, "w", encoding="utf-8") as f:
            json.dump(cls.findings, f, indent=1)

    def hold(self, probe, lo, hi, window, profile_trigger, flags=(), label=None):
        """Finds the agent's trigger in (lo, hi] and holds the profile to it."""
        self.addCleanup(probe.cleanup)
        found = probe.find(lo, hi)
        compacted, fired = probe.runs[found][1], probe.runs[found - 1][1]
        points, summary = replay(compacted, *flags)
        agent = probe.agent_class.name
        self.assertEqual(summary["profile"], agent, "replay takes the profile of the input's agent")
        recorded = [p for p in points if p["recorded"]]
        self.assertEqual(len(recorded), 1, points)
        firing = [p for p in points if p["fired"]]
        self.assertEqual([p["call"] for p in firing], [recorded[0]["call"]],
                         f"fires at the call after which {agent} compacted: {points}")
        pre = recorded[0]["recorded"]["pre_tokens"]
        used = recorded[0]["used"]
        if agent in ("claude-code", "gemini-cli"):
            self.assertLessEqual(abs(used - pre), pre / 1000, f"replayed {used}, recorded {pre}")
        self.assertEqual(recorded[0]["fires_at"], profile_trigger)
        points, _ = replay(fired, *flags)
        self.assertEqual([p for p in points if p["fired"]], [], f"no firing where {agent} did not compact")
        self.findings.append({
            "agent": agent, "version": versions()[agent], "model": label or probe.model or "(default)",
            "window": window, "measured": found, "pre_tokens": pre_tokens(compacted) if agent == "claude-code" else None,
            "profile_trigger": profile_trigger, "replayed": used,
        })

    def test_claude_code_default_model(self):
        # claude-opus-5-5 (a 1,000,000 window): from 2.1.337 an auto-compact window of
        # 400,000 − 20,000 − 13,000 (2.1.332: 1,000,000 − 33,000), decided on characters / 3.
        version = versions()["claude-code"].split(".")
        old = [int(x) for x in version[:3]] < [2, 1, 337]
        lo, hi, at = (960_000, 970_000, 967_000) if old else (360_000, 370_000, 367_000)
        self.hold(Probe(Claude, result_chars=400), lo, hi, 1_000_000, at, label="claude-opus-5-5")

    def test_claude_code_200k_model(self):
        self.hold(Probe(Claude, model="claude-opus-4-6", result_chars=400), 160_000, 170_000, 200_000, 167_000)

    def test_codex_default_window(self):
        # A model without metadata: 272,000, compacting at 90% = 244,800.
        self.hold(Probe(Codex, result_chars=400), 240_000, 250_000, 272_000, 244_800, label="scripted-model (no metadata)")

    def test_gemini_default_limit(self):
        # Gemini CLI: half the model's token limit, compared with the last response's
        # prompt tokens before each request (1,048,576 for Gemini models).
        self.hold(GeminiProbe(), 520_000, 530_000, 1_048_576, 524_288, label="gemini-2.5-pro")

    def test_gemma_4_limit(self):
        # Gemma 4 models: a 256,000 limit.
        self.hold(GeminiProbe("gemma-4-31b-it"), 120_000, 130_000, 256_000, 128_000, label="gemma-4-31b-it")

    def test_codex_configured_window(self):
        self.hold(Probe(Codex, config="model_context_window = 128000", result_chars=400), 100_000, 128_000,
                  128_000, 115_200, label="model_context_window = 128000")

    def test_codex_configured_limit(self):
        # A limit below 90% of the window comes from configuration (or a model's server
        # metadata): replay says so, and the key that sets it makes it fire.
        probe = Probe(Codex, config="model_auto_compact_token_limit = 100000", result_chars=400)
        self.addCleanup(probe.cleanup)
        found = probe.find(90_000, 110_000)
        out = rivumi("replay", probe.runs[found][1]).stdout
        self.assertIn("below the profile's limit", out)
        self.assertIn("trigger.limit_tokens", out)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, dir=TARGET) as f:
            json.dump({"trigger": {"limit_tokens": 100_000}}, f)
        self.addCleanup(os.remove, f.name)
        probe.runs.pop(found - 1, None)
        self.hold_found(probe, found, ("--config", f.name), 272_000, 100_000, "model_auto_compact_token_limit = 100000")

    def hold_found(self, probe, found, flags, window, trigger, label):
        points, _ = replay(probe.runs[found][1], *flags)
        recorded = [p for p in points if p["recorded"]]
        self.assertEqual([p["call"] for p in points if p["fired"]], [recorded[0]["call"]], points)
        before = probe.agent(f"probe-{found - 1}")
        self.addCleanup(before.cleanup)
        self.assertFalse(probe.compacts(found - 1))
        points, _ = replay(probe.runs[found - 1][1], *flags)
        self.assertEqual([p for p in points if p["fired"]], [])
        self.findings.append({"agent": "codex", "version": versions()["codex"], "model": label, "window": window,
                              "measured": found, "pre_tokens": None, "profile_trigger": trigger,
                              "replayed": recorded[0]["used"]})


if __name__ == "__main__":
    unittest.main()

