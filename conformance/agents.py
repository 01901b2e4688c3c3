"""The real agents, installed from the npm registry and run offline (SPEC 13).

`Claude`, `Codex` and `Gemini` each drive one pinned version of the agent in a private home
under `target/agents/runs/`, against a scripted model server on 127.0.0.1
(`modelserver.py`), and hand back what it wrote (the session file) and what it sent
(every request body). Nothing here reaches the network but the npm registry, at
install time; nothing is written outside `target/agents/`.

Versions: `RIVUMI_AGENT_VERSIONS="claude-code=2.1.337,codex=0.171.0,gemini-cli=0.61.0"` (any subset)
overrides the pinned ones below.
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TARGET = os.path.join(ROOT, "target", "agents")

# The versions this repository was last checked against (README, "Resuming").
PINNED = {"claude-code": "2.1.337", "codex": "0.171.0", "gemini-cli": "0.61.0"}
PACKAGES = {
    "claude-code": ("@anthropic-ai/claude-code", "claude"),
    "codex": ("@openai/codex", "codex"),
    "gemini-cli": ("@google/gemini-cli", "gemini"),
}


def versions():
    """The versions to run: the pinned ones, overridden by RIVUMI_AGENT_VERSIONS."""
    chosen = dict(PINNED)
    for part in filter(None, os.environ.get("RIVUMI_AGENT_VERSIONS", "").split(",")):
        name, _, version = part.partition("=")
        if name.strip() not in PINNED or not version.strip():
            raise SystemExit(f"RIVUMI_AGENT_VERSIONS: expected agent=version with agent one of {sorted(PINNED)}: {part!r}")
        chosen[name.strip()] = version.strip()
    return chosen


def install(agent, version):
    """The agent's executable, installed into target/agents/<agent>-<version> once."""
    package, binary = PACKAGES[agent]
    prefix = os.path.join(TARGET, f"{agent}-{version}")
    exe = os.path.join(prefix, "node_modules", ".bin", binary)
    if os.path.exists(os.path.join(prefix, ".installed")) and os.path.exists(exe):
        return exe
    os.makedirs(prefix, exist_ok=True)
    cmd = ["npm", "install", "--no-audit", "--no-fund", "--no-save", "--prefix", prefix,
           "--cache", os.path.join(TARGET, "npm-cache"), f"{package}@{version}"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=dict(os.environ, npm_config_update_notifier="false"))
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60, env=base_env(prefix))
    if version not in out.stdout:
        raise SystemExit(f"{exe} --version printed {out.stdout!r}, expected {version}")
    open(os.path.join(prefix, ".installed"), "w").close()
    return exe


def base_env(home):
    """A clean environment: nothing of the caller's (keys, proxies, config) leaks in."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "TMPDIR": os.path.join(home, "tmp"),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
    }


class Server:
    """The scripted model server for one agent invocation."""

    def __init__(self, workdir, script):
        os.makedirs(workdir, exist_ok=True)
        self.record = tempfile.mkdtemp(prefix="requests-", dir=workdir)
        script_path = os.path.join(self.record, "script.json")
        with open(script_path, "w", encoding="utf-8") as f:
            json.dump(script, f)
        port_file = os.path.join(self.record, "port")
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "modelserver.py"), "--script", script_path,
                                      "--record", os.path.join(self.record, "bodies"), "--port-file", port_file])
        for _ in range(200):
            if os.path.exists(port_file):
                break
            time.sleep(0.025)
        with open(port_file) as f:
            self.port = int(f.read())

    def requests(self):
        """Every request the agent sent, in order: {"path", "kind", "step", "body"}."""
        out = []
        for path in sorted(glob.glob(os.path.join(self.record, "bodies", "*.json"))):
            with open(path, encoding="utf-8") as f:
                out.append(json.load(f))
        return out

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


class Result:
    def __init__(self, code, stdout, stderr, requests):
        self.code, self.stdout, self.stderr, self.requests = code, stdout, stderr, requests

    def steps(self):
        """The requests of the agent's own turns (not compactions or side requests)."""
        return [r for r in self.requests if r["kind"] == "step"]

    def compactions(self):
        return [r for r in self.requests if r["kind"] == "compact"]

    def check(self):
        if self.code != 0:
            raise AssertionError(f"agent exited {self.code}\nstdout: {self.stdout}\nstderr: {self.stderr[-4000:]}")
        return self


class Agent:
    """One agent version in one private home; each `exec` is one invocation."""

    name = ""

    def __init__(self, version=None, label="run"):
        self.version = version or versions()[self.name]
        self.exe = install(self.name, self.version)
        os.makedirs(os.path.join(TARGET, "runs"), exist_ok=True)
        self.dir = tempfile.mkdtemp(prefix=f"{self.name}-{label}-", dir=os.path.join(TARGET, "runs"))
        self.home = os.path.join(self.dir, "home")
        self.work = os.path.join(self.home, "work")
        for d in (self.work, os.path.join(self.home, "tmp")):
            os.makedirs(d, exist_ok=True)

    def cleanup(self):
        """Removes the run's folder (kept with RIVUMI_AGENTS_KEEP=1, to look into)."""
        if os.environ.get("RIVUMI_AGENTS_KEEP") != "1":
            shutil.rmtree(self.dir, ignore_errors=True)

    def exec(self, prompt, script, resume=None, args=()):
        server = Server(self.dir, script)
        try:
            cmd, env = self.command(prompt, server.port, resume, list(args))
            p = subprocess.run(cmd, cwd=self.work, env=env, capture_output=True, text=True, timeout=300)
        finally:
            server.stop()
        return Result(p.returncode, p.stdout, p.stderr, server.requests())


class Claude(Agent):
    name = "claude-code"

    def command(self, prompt, port, resume, args):
        env = base_env(self.home)
        env.update({
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
            "ANTHROPIC_API_KEY": "scripted",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
        })
        cmd = [self.exe, "-p"]
        if resume:
            cmd += ["--resume", resume]
        cmd += [prompt, "--allowedTools", "Bash"] + args
        return cmd, env

    def sessions(self):
        """Session files, newest last."""
        files = glob.glob(os.path.join(self.home, ".claude", "projects", "*", "*.jsonl"))
        return sorted(files, key=os.path.getmtime)

    @staticmethod
    def session_id(path):
        return os.path.basename(path)[: -len(".jsonl")]


class Codex(Agent):
    name = "codex"

    def __init__(self, version=None, label="run", config="", model="scripted-model"):
        super().__init__(version, label)
        self.codex_home = os.path.join(self.dir, "codex")
        os.makedirs(self.codex_home, exist_ok=True)
        self.extra_config = config
        # A model Codex knows (gpt-5.5) gets its freeform `apply_patch` tool; one it does
        # not (the default) gets none, and patches go through `exec_command`.
        self.model = model

    def command(self, prompt, port, resume, args):
        with open(os.path.join(self.codex_home, "config.toml"), "w") as f:
            f.write(
                f'model = "{self.model}"\nmodel_provider = "scripted"\n' + self.extra_config + "\n"
                "[model_providers.scripted]\nname = \"scripted\"\n"
                f"base_url = \"http://127.0.0.1:{port}/v1\"\nwire_api = \"responses\"\nenv_key = \"SCRIPTED_API_KEY\"\n"
            )
        env = base_env(self.home)
        env.update({"CODEX_HOME": self.codex_home, "SCRIPTED_API_KEY": "scripted"})
        cmd = [self.exe, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"] + args
        if resume:
            cmd += ["resume", resume]
        cmd += [prompt]
        return cmd, env

    def sessions(self):
        files = glob.glob(os.path.join(self.codex_home, "sessions", "*", "*", "*", "*.jsonl"))
        return sorted(files, key=os.path.getmtime)

    @staticmethod
    def session_id(path):
        with open(path, encoding="utf-8") as f:
            return json.loads(f.readline())["payload"]["id"]


class Gemini(Agent):
    """Gemini CLI with an API key against the scripted server (`GOOGLE_GEMINI_BASE_URL`).

    The model is named (`-m`): with none, Gemini CLI routes each prompt through a
    classifier call first, which the scripted server does not script.
    """

    name = "gemini-cli"

    def __init__(self, version=None, label="run", model="gemini-2.5-pro", settings=None):
        super().__init__(version, label)
        self.model = model
        gemini = os.path.join(self.home, ".gemini")
        os.makedirs(gemini, exist_ok=True)
        merged = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
        merged.update(settings or {})
        with open(os.path.join(gemini, "settings.json"), "w") as f:
            json.dump(merged, f)

    def command(self, prompt, port, resume, args):
        env = base_env(self.home)
        env.update({
            "GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{port}",
            "GEMINI_API_KEY": "scripted",
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
        })
        cmd = [self.exe, "-m", self.model, "--yolo"]
        if resume:
            cmd += ["--resume", resume]
        cmd += ["-p", prompt] + args
        return cmd, env

    def sessions(self):
        """Main session files (not sub-agents'), newest last."""
        files = glob.glob(os.path.join(self.home, ".gemini", "tmp", "*", "chats", "session-*.json*"))
        return sorted(files, key=os.path.getmtime)

    @staticmethod
    def session_id(path):
        """The id of a JSON Lines session (its first line) or of the one JSON document
        the versions before 0.4x wrote."""
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            return json.loads(text.split("\n", 1)[0])["sessionId"]
        except json.JSONDecodeError:
            return json.loads(text)["sessionId"]
