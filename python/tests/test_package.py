"""The Python package against the command line: same engine, same bytes."""

import json
import os
import subprocess
import sys
import warnings

import pytest

import rivumi_compact as rc

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(ROOT, "testdata", "dataset", "conversations.jsonl")
CASE = os.path.join(ROOT, "testdata", "cases", "fallback-applied", "input.jsonl")
BIN = os.environ.get("RIVUMI_COMPACT") or os.path.join(ROOT, "target", "debug", "rivumi-compact")


def cli(*args, stdin=None):
    return subprocess.run([BIN, *args], input=stdin, capture_output=True, check=False)


def rows(n=40):
    """Conversations with tool calls and reported usage, some over any small budget."""
    out = []
    for k in range(n):
        msgs = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": f"Fix bug {k}."}]
        for s in range(k % 7 + 1):
            msgs.append({"role": "assistant", "content": f"Step {s}.", "tool_calls": [
                {"id": f"c{s}", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": f"pytest t{s}.py"})}}],
                "usage": {"prompt_tokens": 400 * (s + 1), "completion_tokens": 20}})
            msgs.append({"role": "tool", "tool_call_id": f"c{s}", "content": f"{s} passed " + "x" * (k * 13 % 300)})
        msgs.append({"role": "assistant", "content": "Done.", "usage": {"prompt_tokens": 3000, "completion_tokens": 9}})
        out.append(json.dumps({"messages": msgs, "id": k}))
    return out


def test_compact_lines_is_byte_identical_to_the_cli(tmp_path):
    lines = rows()
    data = "".join(line + "\n" for line in lines).encode()
    for keys, flags in [({"task__max_total_tokens": 3000}, ["--max-total-tokens", "3000"]),
                        ({"config": {"task.max_total_tokens": 2000, "fallback.retain_last": 2}}, None),
                        ({"task": {"max_total_tokens": 100000000}}, ["--max-total-tokens", "100000000"])]:
        if flags is None:
            cfg = str(tmp_path / "cfg.json")
            with open(cfg, "w") as f:
                json.dump({"task": {"max_total_tokens": 2000}, "fallback": {"retain_last": 2}}, f)
            flags = ["--config", cfg]
        expected = cli("run", "-", *flags, stdin=data)
        assert expected.returncode == 0, expected.stderr
        got = rc.compact_lines([line + "\n" for line in lines], **keys)
        assert "".join(got).encode() == expected.stdout
        got_bytes = rc.compact_lines([(line + "\n").encode() for line in lines], **keys)
        assert b"".join(got_bytes) == expected.stdout
    # The project's own dataset (with its bad line), lines without terminators.
    with open(DATA, encoding="utf-8") as f:
        text = f.read()
    expected = cli("run", DATA, "--max-total-tokens", "3000")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = rc.compact_lines(text.splitlines(), task__max_total_tokens=3000)
    assert "\n".join(got) + "\n" == expected.stdout.decode()
    assert bool(caught) == (expected.returncode == 4)


def test_configuration_values_of_every_kind_reach_the_engine_as_a_config_file_does(tmp_path):
    """The package hands its keyword arguments over without a JSON module of its own:
    a float, an int, a tuple, an empty list and nested or dotted dicts read as the same
    values in a --config file; what JSON cannot say is refused by name."""
    lines = rows(12)
    tree = {"task": {"max_total_tokens": 2500}, "threshold": 0.5, "verification": ["pytest"],
            "summary": {"preview_chars": 30}, "workspace": {"allowed_paths": []}}
    cfg = str(tmp_path / "cfg.json")
    with open(cfg, "w") as f:
        json.dump(tree, f)
    expected = cli("run", "-", "--config", cfg, stdin="".join(line + "\n" for line in lines).encode())
    assert expected.returncode == 0, expected.stderr
    got = rc.compact_lines([line + "\n" for line in lines], task={"max_total_tokens": 2500}, threshold=0.5,
                           verification=("pytest",), summary__preview_chars=30, config={"workspace.allowed_paths": []})
    assert "".join(got).encode() == expected.stdout
    bare = rc.compact_lines([line + "\n" for line in lines], task__max_total_tokens=2500)
    assert got != bare, "the other values changed something"
    for value, error, message in [(float("nan"), ValueError, "not a finite number"),
                                  (2 ** 70, ValueError, "out of range"),
                                  ({1: 2}, TypeError, "configuration keys are strings, not int"),
                                  ({"pytest"}, TypeError, "not set")]:
        with pytest.raises(error, match=message):
            rc.compact_lines(lines[:1], verification=value)
    loop = {}
    loop["self"] = loop
    with pytest.raises(ValueError, match="deeper than 64"):
        rc.compact_lines(lines[:1], task=loop)


def test_a_byte_order_mark_and_line_ends_are_kept_as_the_cli_keeps_them():
    """A BOM before the first line, CRLF ends, a last line without one: each output
    line carries its own input line's around the rewritten text."""
    lines = rows(6)
    data = b"\xef\xbb\xbf" + "".join(line + "\r\n" for line in lines[:-1]).encode() + lines[-1].encode()
    expected = cli("run", "-", "--max-total-tokens", "3000", stdin=data)
    assert expected.returncode == 0, expected.stderr
    assert expected.stdout.startswith(b"\xef\xbb\xbf") and expected.stdout.count(b"\r\n") == 5
    got = rc.compact_lines(data.splitlines(keepends=True), task__max_total_tokens=3000)
    assert b"".join(got) == expected.stdout
    assert got[0] != data.splitlines(keepends=True)[0], "the first line was rewritten"
    got_text = rc.compact_lines(data.decode("utf-8").splitlines(keepends=True), task__max_total_tokens=3000)
    assert "".join(got_text).encode() == expected.stdout


def test_many_pieces_come_back_in_order():
    """More than a few MB of lines, so that workers compact pieces of them in parallel
    while the first ones are turned into Python objects: the order and the bytes hold,
    a bad line in the middle is reported at its own index."""
    lines = [line + "\n" for line in rows(2000)]
    lines[700] = '{"messages": [broken\n'
    data = "".join(lines).encode()
    assert len(data) > 3 << 20
    expected = cli("run", "-", "--max-total-tokens", "3000", stdin=data)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = rc.compact_lines([line.encode() for line in lines], task__max_total_tokens=3000)
    assert b"".join(got) == expected.stdout
    assert got[700] == lines[700].encode(), "a bad line is kept, in its place"
    assert any("701" in str(w.message) for w in caught), [str(w.message) for w in caught]


def test_bad_lines_are_kept_skipped_or_raised():
    lines = [rows(1)[0], "{not json", rows(2)[1]]
    with pytest.warns(UserWarning, match="1 bad line"):
        assert rc.compact_lines(lines, task__max_total_tokens=3000)[1] == "{not json"
    assert len(rc.compact_lines(lines, on_bad="skip", task__max_total_tokens=3000)) == 2
    with pytest.raises(rc.BadLineError) as e:
        rc.compact_lines(lines, on_bad="raise", task__max_total_tokens=3000)
    assert e.value.index == 1 and "<lines>:2:2" in e.value.message


def test_lines_of_the_wrong_type_are_a_type_error_naming_the_line():
    line = rows(1)[0]
    for one in (line, line.encode()):
        with pytest.raises(TypeError, match="not one (str|bytes): pass \\[line\\]"):
            rc.compact_lines(one)
    with pytest.raises(TypeError, match="line 2 is a NoneType, not a str or bytes"):
        rc.compact_lines([line, None])
    with pytest.raises(TypeError, match="line 1 is a int"):
        rc.compact_lines([7])
    assert rc.compact_lines(iter([line])) == [line], "any iterable of lines"
    messages = json.loads(line)["messages"]
    for wrong in (line, {"messages": messages}):
        with pytest.raises(TypeError, match="messages is a list of chat messages"):
            rc.compact(wrong)
    with pytest.raises(ValueError, match="JSON"):
        rc.compact(messages + [{"role": "user", "content": float("nan")}])


def test_compact_one_conversation_returns_messages_and_decision():
    messages = json.loads(rows(7)[6])["messages"]
    out = rc.compact(messages, task__max_total_tokens=3000)
    assert out["decision"]["action"] == "history_fallback"
    assert out["decision"]["path"] == "agent-runner"
    names = [m.get("name") for m in out["messages"] if m.get("name")]
    assert names == ["rivumi-history_summary_fallback", "rivumi-pressure_reminder", "rivumi-reanchor"]
    assert out["messages"][:3] == messages[:3], "the head is protected"
    unchanged = rc.compact(messages, task__max_total_tokens=10 ** 9)
    assert unchanged["messages"] == messages and unchanged["decision"]["action"] == "none"
    with pytest.raises(ValueError, match="unknown configuration key"):
        rc.compact(messages, task__max_total_token=3000)


def test_dataset_map_for_batched_map():
    batch = {"messages": [json.loads(r)["messages"] for r in rows(5)], "id": list(range(5))}
    out = rc.dataset_map(task__max_total_tokens=3000)(batch)
    assert len(out["messages"]) == 5 and len(out["rivumi_action"]) == 5
    assert out["rivumi_action"][4] == "history_fallback", out["rivumi_action"]


def test_decide_and_replay_read_files():
    d = rc.decide(CASE)
    assert d["action"] == "history_fallback" and d["used"] == 19455 and d["turns"]
    expected = json.loads(cli("decide", "--json", CASE).stdout)
    assert d == expected
    r = rc.replay(CASE)
    assert r["summary"]["type"] == "summary" and r["points"]
    assert r["points"] == [json.loads(l) for l in cli("replay", "--json", CASE).stdout.decode().splitlines()[:-1]]
    with pytest.raises(OSError):
        rc.decide(os.path.join(HERE, "no-such-file.jsonl"))


def test_compact_lines_results_are_the_engines_own_figures():
    """Per-row results come from the engine: the action, the tokens before and after
    that `--provenance` writes for the same rows, a rejected line's message."""
    lines = rows(12) + ["{not json"]
    data = "".join(line + "\n" for line in lines).encode()
    expected = cli("run", "-", "--max-total-tokens", "3000", "--provenance", stdin=data)
    marked = [json.loads(l) for l in expected.stdout.decode().splitlines()[:-1]]
    got = rc.compact_lines(lines, results=True, task__max_total_tokens=3000)
    assert len(got) == 13
    for row, m in zip(got, marked):
        p = m["rivumi"]
        assert (row.action, row.tokens_before, row.tokens_after) == (p["action"], p["tokens_before"], p["tokens_after"])
        assert row.rejected is None
    assert {r.action for r in got[:12]} == {"pressure_reminder", "history_fallback"}, [r.action for r in got]
    fit = rc.compact_lines(lines[:12], results=True, fallback__target_tokens=150)
    assert all(r.tokens_after <= 150 for r in fit) and any(r.tokens_before > 150 for r in fit)
    assert [r.tokens_after < r.tokens_before for r in fit] == [r.tokens_before > 150 for r in fit]
    bad = got[12]
    assert bad.line == "{not json" and bad.action is None and bad.tokens_before is None
    assert bad.rejected.startswith("<lines>:13:2: "), bad.rejected
    assert len(rc.compact_lines(lines, results=True, on_bad="skip", task__max_total_tokens=3000)) == 12


def test_an_action_is_named_by_the_engine_never_guessed_from_the_messages():
    """A conversation runtime's native compaction request reads as
    `native_compaction_requested` (the package once matched the names of the injected
    messages, and called it `none`)."""
    cfg = {"runtime.kind": "conversation", "runtime.native_compaction": True, "runtime.context_window": 2000}
    got = rc.compact_lines(rows(12), cfg, results=True)
    actions = {r.action for r in got}
    assert "native_compaction_requested" in actions, actions
    fn = rc.dataset_map(cfg)
    out = fn({"messages": [json.loads(r)["messages"] for r in rows(12)]})
    assert out["rivumi_action"] == [r.action for r in got]
    assert out["rivumi_tokens_after"] == [r.tokens_after for r in got]


def test_dataset_map_checks_its_configuration_when_made_and_says_batched():
    with pytest.raises(ValueError, match="unknown configuration key"):
        rc.dataset_map(task__max_total_token=3000)
    with pytest.raises(ValueError, match="unknown profile"):
        rc.dataset_map(profile="claude")
    with pytest.raises(ValueError, match="on_bad is keep, skip or raise"):
        rc.dataset_map(on_bad="drop")
    fn = rc.dataset_map(task__max_total_tokens=3000)
    one_row = {"messages": json.loads(rows(3)[2])["messages"], "id": 2}
    with pytest.raises(TypeError, match=r"ds.map\(fn, batched=True\)"):
        fn(one_row)
    with pytest.raises(KeyError, match="no column 'messages'"):
        fn({"conversation": [[]]})


def test_dataset_map_on_bad_keeps_skips_or_raises():
    good = [json.loads(r)["messages"] for r in rows(5)]
    broken = [{"role": "wizard", "content": "x"}]  # a role the chat format does not have
    batch = {"messages": good[:2] + [broken] + good[2:], "id": [0, 1, 99, 2, 3, 4]}
    with pytest.raises(rc.BadLineError) as e:
        rc.dataset_map(task__max_total_tokens=3000)(batch)
    assert e.value.index == 2
    kept = rc.dataset_map(task__max_total_tokens=3000, on_bad="keep")(batch)
    assert kept["messages"][2] == broken and kept["rivumi_action"][2] is None and len(kept["messages"]) == 6
    skipped = rc.dataset_map(task__max_total_tokens=3000, on_bad="skip")(batch)
    assert skipped["id"] == [0, 1, 2, 3, 4] and len(skipped["messages"]) == 5
    assert skipped["rivumi_action"] == [a for i, a in enumerate(kept["rivumi_action"]) if i != 2]


def write_dataset(path, lines):
    with open(path, "wb") as f:
        f.write("".join(line + "\n" for line in lines).encode())
    return str(path)


def test_compact_file_writes_what_the_cli_writes(tmp_path):
    lines = rows(300)
    lines[40] = "{not json"
    src = write_dataset(tmp_path / "in.jsonl", lines)
    expected = cli("run", src, "--max-total-tokens", "3000")
    out = tmp_path / "out.jsonl"
    with pytest.warns(UserWarning, match="1 bad line"):
        summary = rc.compact_file(src, out, task__max_total_tokens=3000)
    assert out.read_bytes() == expected.stdout
    assert (summary.lines, summary.bad, summary.blank) == (300, 1, 0)
    assert summary.changed == sum(1 for a, b in zip(expected.stdout.splitlines(), open(src, "rb").read().splitlines()) if a != b)
    assert summary.rejected[0][0] == 41 and "in.jsonl:41:2" in summary.rejected[0][1]
    skipped = rc.compact_file(src, tmp_path / "skipped.jsonl", on_bad="skip", task__max_total_tokens=3000)
    assert (tmp_path / "skipped.jsonl").read_bytes().count(b"\n") == 299 and skipped.bad == 1
    # Raised: nothing is written, not even an empty file; an output is never the input.
    with pytest.raises(rc.BadLineError) as e:
        rc.compact_file(src, tmp_path / "raised.jsonl", on_bad="raise", task__max_total_tokens=3000)
    assert e.value.index == 40 and not (tmp_path / "raised.jsonl").exists()
    with pytest.raises(ValueError, match="is the input"):
        rc.compact_file(src, src)
    before = open(src, "rb").read()
    assert before == "".join(line + "\n" for line in lines).encode(), "the input is untouched"


def test_compact_file_refuses_what_is_not_a_dataset_and_reads_compressed_files(tmp_path):
    import gzip

    with pytest.raises(ValueError, match="not a dataset"):
        rc.compact_file(CASE, tmp_path / "o.jsonl")
    with pytest.raises(OSError):
        rc.compact_file(tmp_path / "missing.jsonl", tmp_path / "o.jsonl")
    # A folder is what Python's own open says it is, for both calls.
    with pytest.raises(IsADirectoryError, match="is a directory"):
        rc.compact_file(tmp_path, tmp_path / "o.jsonl")
    with pytest.raises(IsADirectoryError, match="is a directory"):
        rc.iter_file(tmp_path)
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="not a dataset"):
        rc.compact_file(empty, tmp_path / "o.jsonl")
    gz = tmp_path / "in.jsonl.gz"
    gz.write_bytes(gzip.compress("".join(line + "\n" for line in rows(20)).encode()))
    expected = cli("run", str(gz), "--max-total-tokens", "3000")
    rc.compact_file(gz, tmp_path / "o.jsonl", task__max_total_tokens=3000)
    assert (tmp_path / "o.jsonl").read_bytes() == expected.stdout


def test_iter_file_streams_the_cli_bytes(tmp_path):
    """More than a few MB, so the engine runs ahead in pieces: the lines come in order
    with their terminators, as str or bytes."""
    lines = rows(2000)
    lines[700] = '{"messages": [broken'
    src = write_dataset(tmp_path / "in.jsonl", lines)
    assert os.path.getsize(src) > 3 << 20
    expected = cli("run", src, "--max-total-tokens", "3000").stdout
    with pytest.warns(UserWarning, match="1 bad line"):
        got = list(rc.iter_file(src, task__max_total_tokens=3000))
    assert "".join(got).encode() == expected and len(got) == 2000 and all(l.endswith("\n") for l in got)
    assert b"".join(rc.iter_file(src, binary=True, on_bad="skip", task__max_total_tokens=3000)) == b"".join(
        l + b"\n" for i, l in enumerate(expected.splitlines()) if i != 700)
    # Raised at the bad line, after every line before it.
    seen = []
    with pytest.raises(rc.BadLineError) as e:
        for line in rc.iter_file(src, on_bad="raise", task__max_total_tokens=3000):
            seen.append(line)
    assert e.value.index == 700 and len(seen) == 700 and "in.jsonl:701:" in e.value.message
    assert "".join(seen).encode() == b"".join(l + b"\n" for l in expected.splitlines()[:700])
    # Checked when called, not at the first line.
    with pytest.raises(ValueError, match="unknown configuration key"):
        rc.iter_file(src, task__max_total_token=3000)
    with pytest.raises(OSError):
        rc.iter_file(tmp_path / "missing.jsonl")


def test_iter_file_left_early_stops_the_engine(tmp_path):
    """A loop that breaks off, then another: the engine's threads stop (a pipe closed),
    nothing hangs, and the file can be read again at once."""
    src = write_dataset(tmp_path / "in.jsonl", rows(2000))
    for _ in range(3):
        it = rc.iter_file(src, task__max_total_tokens=3000)
        first = next(it)
        assert first.startswith("{")
        del it
    last = list(rc.iter_file(src, task__max_total_tokens=3000))[-1]
    assert last.endswith("\n")


def test_a_line_that_is_not_utf8_comes_back_as_its_bytes(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_bytes(rows(1)[0].encode() + b"\n" + b'{"messages": "\xff"}\n')
    with pytest.warns(UserWarning):
        got = list(rc.iter_file(src))
    assert got[1].encode("utf-8", "surrogateescape") == b'{"messages": "\xff"}\n'
    with pytest.warns(UserWarning):
        assert list(rc.iter_file(src, binary=True))[1] == b'{"messages": "\xff"}\n'


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
@pytest.mark.parametrize("call", ["compact_file", "iter_file"])
def test_the_file_calls_open_their_input_with_the_gil_released(tmp_path, call):
    """A named pipe fed by a Python thread: the call opens it and reads its head while
    the thread writes. Were the GIL held meanwhile, the writer could never run and the
    process would hang: it runs in a child process, stopped after a minute."""
    lines = rows(60)
    src = write_dataset(tmp_path / "plain.jsonl", lines)
    expected = cli("run", src, "--max-total-tokens", "3000").stdout
    pipe, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    os.mkfifo(pipe)
    child = f"""
import sys, threading
import rivumi_compact as rc
data = open({src!r}, "rb").read()
def feed():
    with open({str(pipe)!r}, "wb") as w:
        w.write(data)
writer = threading.Thread(target=feed)
writer.start()
if {call!r} == "compact_file":
    rc.compact_file({str(pipe)!r}, {str(out)!r}, task__max_total_tokens=3000)
else:
    with open({str(out)!r}, "wb") as w:
        w.writelines(rc.iter_file({str(pipe)!r}, binary=True, task__max_total_tokens=3000))
writer.join()
"""
    try:
        done = subprocess.run([sys.executable, "-c", child], capture_output=True, timeout=60, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{call} held the GIL while it opened a named pipe that a Python thread feeds: it hung")
    assert done.returncode == 0, done.stderr.decode()
    assert out.read_bytes() == expected


@pytest.mark.parametrize("call", ["compact", "compact_lines", "compact_file", "iter_file", "dataset_map"])
def test_a_key_that_cannot_act_on_the_rows_path_is_said_as_the_cli_says_it(tmp_path, call):
    """The command line says once, before the rows, that a budget cannot act on the
    conversation path; every call of the package warns of it, naming the key and the
    key that would make it act, and nothing else changes."""
    line = rows(7)[6]
    data = tmp_path / "d.jsonl"
    data.write_text(line + "\n")
    keys = {"task__max_total_tokens": 3000, "runtime__kind": "conversation", "fallback__target_tokens": 500}
    calls = {
        "compact": lambda: rc.compact(json.loads(line)["messages"], **keys),
        "compact_lines": lambda: rc.compact_lines([line + "\n"], **keys),
        "compact_file": lambda: rc.compact_file(data, tmp_path / "out.jsonl", **keys),
        "iter_file": lambda: list(rc.iter_file(data, **keys)),
        "dataset_map": lambda: rc.dataset_map(**keys),
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        calls[call]()
    said = [str(w.message) for w in caught]
    assert said == [
        'task.max_total_tokens does not act on the conversation path the rows take; '
        'it acts on the agent-runner path: add runtime__kind="agent-runner"',
        'fallback.target_tokens does not act on the conversation path the rows take; '
        'it acts on the agent-runner path: add runtime__kind="agent-runner"',
    ], said
    assert all(w.filename == __file__ for w in caught), "the warning points at the caller"
    cli_said = cli("run", str(data), "--runtime", "conversation", "--max-total-tokens", "3000").stderr.decode()
    assert "task.max_total_tokens (--max-total-tokens) does not act on the conversation path its rows take" in cli_said
    # On the agent runner both act: no warning.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rc.compact_lines([line + "\n"], task__max_total_tokens=3000, fallback__target_tokens=500)
    assert not caught, [str(w.message) for w in caught]
