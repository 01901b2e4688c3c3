"""Finding where a real agent compacts by itself (SPEC 13 "triggers").

One probe is one short session: the agent's first model call reports a usage of `u`
tokens and asks for one small tool call; whether the agent compacts before its next
call says whether `u` (plus the call's output and the tool result) reached its trigger.
Bisection over `u` finds the smallest usage that compacts.
"""

import json

from agents import Claude, Codex, Gemini

# A tool call whose result is one short line, the same on every run.
CLAUDE_CALL = {"name": "Bash", "input": {"command": "printf ok", "description": "print ok"}}
CODEX_CALL = {"name": "exec_command", "input": {"cmd": "printf ok"}}
OUTPUT = 10  # output tokens the probe's call reports


def claude_usage(total):
    """A Claude usage of `total` tokens (input, cache write, cache read, output)."""
    return {"input_tokens": 5, "cache_creation_input_tokens": 100,
            "cache_read_input_tokens": total - 5 - 100 - OUTPUT, "output_tokens": OUTPUT}


def codex_usage(total):
    """A Responses usage of `total` tokens (input includes the cached part)."""
    return {"input_tokens": total - OUTPUT, "cached_tokens": (total - OUTPUT) // 2, "output_tokens": OUTPUT}


class Probe:
    """Probes one agent and model; keeps the session of every probe it ran."""

    def __init__(self, agent_class, model=None, config="", result_chars=2):
        self.agent_class, self.model, self.config = agent_class, model, config
        self.result_chars = result_chars
        self.runs = {}

    def script(self, total):
        if self.agent_class is Claude:
            call, usage = CLAUDE_CALL, claude_usage
        else:
            call, usage = CODEX_CALL, codex_usage
        big = json.loads(json.dumps(call))
        printed = "o" * self.result_chars
        key = "command" if self.agent_class is Claude else "cmd"
        big["input"][key] = f"printf {printed}"
        # A first small call: an agent compacts nothing when the only history is the
        # call that reported the usage (Claude Code keeps that one as its preserved
        # segment).
        return {"steps": [{"text": "Looking.", "tool": call, "usage": usage(20000)},
                          {"text": "Checking.", "tool": big, "usage": usage(total)},
                          {"text": "Done.", "usage": usage(3000)}],
                "compact": {"text": "<summary>Printed ok.</summary>", "usage": usage(2000)}}

    def agent(self, label):
        if self.agent_class is Codex:
            return Codex(label=label, config=self.config)
        return Claude(label=label)

    def compacts(self, total):
        """Runs one probe at `total`: whether the agent compacted, and its session file."""
        agent = self.agent(f"probe-{total}")
        args = ["--model", self.model] if self.model else []
        if self.agent_class is Codex and self.model:
            args = ["-m", self.model]
        result = agent.exec("Print ok, then stop.", self.script(total), args=args).check()
        compacted = bool(result.compactions())
        self.runs[total] = (compacted, agent.sessions()[-1], agent)
        return compacted

    def find(self, lo, hi):
        """The smallest total in (lo, hi] that compacts, given lo does not and hi does."""
        if self.compacts(lo) or not self.compacts(hi):
            raise AssertionError(f"{self.agent_class.name} {self.model}: expected no compaction at {lo} and one at {hi}")
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.compacts(mid):
                hi = mid
            else:
                lo = mid
        return hi

    def cleanup(self):
        for _, _, agent in self.runs.values():
            agent.cleanup()


def pre_tokens(session):
    """Claude Code's recorded pre-compaction figure in a session file."""
    with open(session, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if r.get("subtype") == "compact_boundary":
                return r["compactMetadata"]["preTokens"]
    return None


def gemini_usage(prompt):
    """A Gemini usage whose prompt is `prompt` tokens (the figure Gemini CLI compares)."""
    return {"promptTokenCount": prompt, "candidatesTokenCount": OUTPUT}


class GeminiProbe(Probe):
    """Gemini CLI compresses only the history before a prompt of the user's, so a probe
    is two invocations: a first turn whose tool output is most of the history, then a
    resumed turn whose first call reports `total` prompt tokens; whether the agent
    compressed before its next request says whether `total` reached its trigger."""

    def __init__(self, model="gemini-2.5-pro"):
        super().__init__(Gemini, model)

    def compacts(self, total):
        agent = Gemini(label=f"probe-{total}", model=self.model)
        call = {"name": "run_shell_command", "input": {"command": "seq 1 3000"}}
        first = {"steps": [{"text": "Looking.", "tool": call, "usage": gemini_usage(20000)},
                           {"text": "Listed.", "usage": gemini_usage(21000)}]}
        agent.exec("List the numbers.", first).check()
        session = agent.sessions()[-1]
        small = {"name": "run_shell_command", "input": {"command": "printf ok"}}
        second = {"steps": [{"text": "Checking.", "tool": small, "usage": gemini_usage(total)},
                            {"text": "Done.", "usage": gemini_usage(3000)}],
                  "compact": {"text": "<state_snapshot>Listed the numbers.</state_snapshot>",
                              "usage": gemini_usage(2000)}}
        result = agent.exec("Print ok, then stop.", second, resume=Gemini.session_id(session)).check()
        compacted = bool(result.compactions())
        self.runs[total] = (compacted, agent.sessions()[-1], agent)
        return compacted


if __name__ == "__main__":
    import sys
    agent = {"claude-code": Claude, "codex": Codex, "gemini-cli": Gemini}[sys.argv[1]]
    model = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] != "-" else None
    lo, hi = int(sys.argv[3]), int(sys.argv[4])
    config = sys.argv[5] if len(sys.argv) > 5 else ""
    p = GeminiProbe(model or "gemini-2.5-pro") if agent is Gemini else Probe(agent, model, config)
    t = p.find(lo, hi)
    print(json.dumps({"agent": agent.name, "model": model, "trigger": t,
                      "pre_tokens": pre_tokens(p.runs[t][1]) if agent is Claude else None}))
    p.cleanup()
