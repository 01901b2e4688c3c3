"""Rivumi's two-threshold context compaction, from Python.

The engine of the ``rivumi-compact`` command-line tool: the same policy, the same
configuration keys, byte-identical output. Configure with the keys of ``--config``
(SPEC 2) given as keyword arguments, dotted keys spelled with ``__``
(``task__max_total_tokens=16000``), nested dicts (``task={"max_total_tokens": 16000}``)
or one ``config`` dict whose keys may be dotted (``config={"task.max_total_tokens":
16000}``); ``profile`` (``rivumi``, ``claude-code``, ``codex``) and ``input_format`` as
on the command line.
"""

import json
import warnings
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from . import _native

__version__ = _native.__version__
__all__ = ["compact", "compact_lines", "dataset_map", "decide", "replay", "BadLineError", "__version__"]


class BadLineError(ValueError):
    """A dataset line the engine cannot read (``on_bad="raise"``): ``.index`` and ``.message``."""

    def __init__(self, index: int, message: str):
        super().__init__(f"line {index + 1}: {message}")
        self.index, self.message = index, message


def _merge(into: Dict[str, Any], path: Sequence[str], value: Any) -> None:
    node = into
    for key in path[:-1]:
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            raise ValueError(f"configuration key {'.'.join(path)!r} runs through a value")
    last = path[-1]
    if isinstance(value, dict) and isinstance(node.get(last), dict):
        for k, v in value.items():
            _merge(node[last], [k], v)
    else:
        node[last] = value


def _config(config: Optional[Dict[str, Any]], keys: Dict[str, Any]) -> Tuple[str, Optional[str], Optional[str]]:
    """The configuration as the JSON the engine reads, the profile, the input format."""
    tree: Dict[str, Any] = {}
    profile = keys.pop("profile", None)
    input_format = keys.pop("input_format", None)
    for key, value in list((config or {}).items()) + list(keys.items()):
        path = key.split(".") if "." in key else key.split("__")
        _merge(tree, path, value)
    return json.dumps(tree), profile, input_format


def compact(messages: List[Dict[str, Any]], config: Optional[Dict[str, Any]] = None, **keys: Any) -> Dict[str, Any]:
    """Compacts one conversation (a list of chat messages in the chat-completions shape).

    Returns ``{"messages": [...], "decision": {...}}``: the messages as the dataset mode
    of the command line writes them (kept messages unchanged, injected ones as user
    messages named ``rivumi-<kind>``) and the decision (``action``, ``used``, ``limit``,
    ``reasons``, ...). A conversation the engine cannot read raises ``ValueError`` (a
    float NaN or infinity too); ``messages`` that is not a list raises ``TypeError``.
    """
    if isinstance(messages, (str, bytes, bytearray, dict)):
        raise TypeError(f"messages is a list of chat messages (dicts), not a {type(messages).__name__}")
    cfg, profile, _ = _config(config, keys)
    # NaN and infinities are not JSON: refused here, by name, rather than as a bad value.
    out, decision = _native.compact(json.dumps(messages, ensure_ascii=False, allow_nan=False), cfg, profile)
    return {"messages": json.loads(out), "decision": json.loads(decision)}


def compact_lines(
    lines: Iterable[Union[str, bytes]],
    config: Optional[Dict[str, Any]] = None,
    *,
    on_bad: str = "keep",
    **keys: Any,
) -> List[Union[str, bytes]]:
    """Compacts dataset lines (OpenAI chat lines ``{"messages": [...]}``, or OpenHands
    evaluation rows with ``input_format="openhands"``), each on its own.

    Returns one output line per input line, each ``str`` or ``bytes`` as it came (a
    line's own terminator kept), byte-identical to ``rivumi-compact run`` in dataset
    mode with the same configuration. Runs on every core with the GIL released.
    ``on_bad``: ``"keep"`` echoes a bad line unchanged and warns (the command line's
    way), ``"skip"`` leaves it out, ``"raise"`` raises :class:`BadLineError`.
    """
    if on_bad not in ("keep", "skip", "raise"):
        raise ValueError(f"on_bad is keep, skip or raise, not {on_bad!r}")
    if isinstance(lines, (str, bytes, bytearray)):
        # Iterated, one line would be taken for a line per character.
        raise TypeError(f"lines is a list (or iterable) of lines, not one {type(lines).__name__}: pass [line]")
    cfg, profile, input_format = _config(config, keys)
    out, bad = _native.compact_lines(list(lines), cfg, profile, input_format)
    if bad and on_bad == "raise":
        raise BadLineError(*bad[0])
    if bad and on_bad == "skip":
        drop = {i for i, _ in bad}
        return [line for i, line in enumerate(out) if i not in drop]
    if bad:
        warnings.warn(f"{len(bad)} bad line(s) echoed unchanged; the first: {bad[0][1]}", stacklevel=2)
    return out


def dataset_map(config: Optional[Dict[str, Any]] = None, *, column: str = "messages", **keys: Any) -> Callable[[Dict[str, list]], Dict[str, list]]:
    """A function for ``datasets.Dataset.map(fn, batched=True)``: compacts the
    conversations of the ``column`` column of each batch (all at once, on every core)
    and adds ``rivumi_action`` (what was done to each row)."""
    cfg, profile, input_format = _config(config, keys)

    def fn(batch: Dict[str, list]) -> Dict[str, list]:
        rows = [json.dumps({"messages": m}, ensure_ascii=False) for m in batch[column]]
        out, bad = _native.compact_lines(rows, cfg, profile, input_format or "openai")
        if bad:
            raise BadLineError(*bad[0])
        compacted = [json.loads(line)["messages"] for line in out]
        return {column: compacted, "rivumi_action": [_action(m) for m in compacted]}

    return fn


def _action(messages: List[Dict[str, Any]]) -> str:
    names = [m.get("name", "") for m in messages if isinstance(m, dict)]
    if "rivumi-history_summary_fallback" in names:
        return "history_fallback"
    if "rivumi-pressure_reminder" in names:
        return "pressure_reminder"
    return "none"


def decide(path: str, config: Optional[Dict[str, Any]] = None, **keys: Any) -> Dict[str, Any]:
    """The decision for a transcript file of any format the tool reads, as ``decide
    --json`` prints it (with its per-turn rows)."""
    cfg, profile, input_format = _config(config, keys)
    return json.loads(_native.decide(str(path), cfg, profile, input_format))


def replay(path: str, config: Optional[Dict[str, Any]] = None, **keys: Any) -> Dict[str, Any]:
    """``replay --json`` of a transcript file: ``{"points": [...], "summary": {...}}``,
    under the profile of the agent that wrote it unless ``profile`` names one."""
    cfg, profile, input_format = _config(config, keys)
    lines = [json.loads(line) for line in _native.replay(str(path), cfg, profile, input_format).splitlines()]
    return {"points": lines[:-1], "summary": lines[-1]}
