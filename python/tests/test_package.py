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
