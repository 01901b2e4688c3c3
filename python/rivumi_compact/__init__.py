"""Rivumi's two-threshold context compaction, from Python.

The engine of the ``rivumi-compact`` command-line tool: the same policy, the same
configuration keys, byte-identical output. Configure with the keys of ``--config``
(SPEC 2) given as keyword arguments, dotted keys spelled with ``__``
(``task__max_total_tokens=16000``), nested dicts (``task={"max_total_tokens": 16000}``)
or one ``config`` dict whose keys may be dotted (``config={"task.max_total_tokens":
16000}``); ``profile`` (``rivumi``, ``claude-code``, ``codex``, ``gemini-cli``) and
``input_format`` as on the command line. A dataset file is best given by its path
(:func:`compact_file`, :func:`iter_file`): Rust reads it, Python never holds its lines.
"""

from __future__ import annotations

import os
import warnings
from collections import namedtuple

from . import _native

# The module imports only what Python has loaded at start-up anyway: a script that
# hands a file to compact_file or iter_file pays for nothing it does not use (typing
# and json cost a streaming script 3% of its time). The annotations are for readers
# and type checkers (the stub beside this file holds the same).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

__version__ = _native.__version__
__all__ = [
    "compact",
    "compact_lines",
    "compact_file",
    "iter_file",
    "dataset_map",
    "decide",
    "replay",
    "BadLineError",
    "Row",
    "FileSummary",
    "__version__",
]

_ON_BAD = ("keep", "skip", "raise")


class BadLineError(ValueError):
    """A dataset line the engine cannot read (``on_bad="raise"``): ``.index`` and ``.message``."""

    def __init__(self, index: int, message: str):
        super().__init__(f"line {index + 1}: {message}")
        self.index, self.message = index, message


class Row(namedtuple("Row", "line action tokens_before tokens_after rejected")):
    """What :func:`compact_lines` with ``results=True`` did with one line: the output
    ``line`` (the type it came as), the engine's ``action`` (``none``,
    ``pressure_reminder``, ``history_fallback``, ...), the row's ``tokens_before`` and
    ``tokens_after`` by the configured tokenizer (after: the row as written), and the
    message of a line the engine rejected (``rejected``; then action and tokens are
    ``None``, as for a blank line)."""

    __slots__ = ()


class FileSummary(namedtuple("FileSummary", "lines changed shortened blank bad over_target rejected warnings")):
    """What :func:`compact_file` did: lines read, rewritten, rewritten shorter, blank,
    bad and over a size to fit's target; the bad lines and the warnings as
    ``(line, message)`` with line numbers from 1."""

    __slots__ = ()


def _check_on_bad(on_bad: str) -> None:
    if on_bad not in _ON_BAD:
        raise ValueError(f"on_bad is keep, skip or raise, not {on_bad!r}")


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
    return _native.config_json(tree), profile, input_format


# The warnings of a configuration whose keys cannot act, by (configuration, profile):
# asked of the engine once, not at every call of a loop.
_INERT: Dict[Tuple[str, Optional[str]], List[str]] = {}


def _warn_inert(cfg: str, profile: Optional[str]) -> None:
    """Warns of each key set that cannot act on the path the rows take, as the command
    line says it once before the rows (``task.max_total_tokens`` under the conversation
    runtime, ...)."""
    said = _INERT.get((cfg, profile))
    if said is None:
        said = _INERT[(cfg, profile)] = _native.inert(cfg, profile)
    for message in said:
        warnings.warn(message, stacklevel=3)


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
    import json

    cfg, profile, _ = _config(config, keys)
    _warn_inert(cfg, profile)
    # NaN and infinities are not JSON: refused here, by name, rather than as a bad value.
    out, decision = _native.compact(json.dumps(messages, ensure_ascii=False, allow_nan=False), cfg, profile)
    return {"messages": json.loads(out), "decision": json.loads(decision)}


def compact_lines(
    lines: Iterable[Union[str, bytes]],
    config: Optional[Dict[str, Any]] = None,
    *,
    on_bad: str = "keep",
    results: bool = False,
    **keys: Any,
) -> Union[List[Union[str, bytes]], List[Row]]:
    """Compacts dataset lines (OpenAI chat lines ``{"messages": [...]}``, or OpenHands
    evaluation rows with ``input_format="openhands"``), each on its own.

    Returns one output line per input line, each ``str`` or ``bytes`` as it came (a
    line's own terminator kept), byte-identical to ``rivumi-compact run`` in dataset
    mode with the same configuration. Runs on every core with the GIL released.
    ``on_bad``: ``"keep"`` echoes a bad line unchanged and warns (the command line's
    way), ``"skip"`` leaves it out, ``"raise"`` raises :class:`BadLineError`.
    ``results=True`` returns a :class:`Row` per line instead (its action, its tokens
    before and after, and a rejected line's message, from the engine's own values; no
    warning then: the rows say it).
    """
    _check_on_bad(on_bad)
    if isinstance(lines, (str, bytes, bytearray)):
        # Iterated, one line would be taken for a line per character.
        raise TypeError(f"lines is a list (or iterable) of lines, not one {type(lines).__name__}: pass [line]")
    cfg, profile, input_format = _config(config, keys)
    _warn_inert(cfg, profile)
    out, bad, figures = _native.compact_lines(list(lines), cfg, profile, input_format)
    if bad and on_bad == "raise":
        raise BadLineError(*bad[0])
    rejected = dict(bad)
    if results:
        rows = [
            Row(line, *(f if f is not None else (None, None, None)), rejected.get(i))
            for i, (line, f) in enumerate(zip(out, figures))
        ]
        return [r for r in rows if r.rejected is None] if on_bad == "skip" else rows
    if bad and on_bad == "skip":
        return [line for i, line in enumerate(out) if i not in rejected]
    if bad:
        warnings.warn(f"{len(bad)} bad line(s) echoed unchanged; the first: {bad[0][1]}", stacklevel=2)
    return out


def compact_file(
    path: Union[str, "os.PathLike[str]"],
    output: Union[str, "os.PathLike[str]"],
    config: Optional[Dict[str, Any]] = None,
    *,
    on_bad: str = "keep",
    **keys: Any,
) -> FileSummary:
    """Compacts a dataset file into ``output``, as ``rivumi-compact run PATH --out
    OUTPUT`` does: Rust reads the file (plain or compressed), compacts it on every core
    and writes it, the GIL released from the opening of the file on; Python never sees a
    line. The output is written atomically, and not at all when the input fails or a bad
    line raises. The format is detected from the file's head unless ``input_format``
    names it; a file that is not a dataset is refused. ``on_bad`` as in
    :func:`compact_lines` (``"keep"`` warns).
    """
    _check_on_bad(on_bad)
    cfg, profile, input_format = _config(config, keys)
    _warn_inert(cfg, profile)
    try:
        figures, bad, told = _native.compact_file(os.fspath(path), os.fspath(output), cfg, profile, input_format, on_bad)
    except _native.BadLine as e:
        raise BadLineError(*e.args) from None
    if bad and on_bad == "keep":
        warnings.warn(f"{len(bad)} bad line(s) echoed unchanged; the first: {bad[0][1]}", stacklevel=2)
    return FileSummary(*figures, bad, told)


def iter_file(
    path: Union[str, "os.PathLike[str]"],
    config: Optional[Dict[str, Any]] = None,
    *,
    on_bad: str = "keep",
    binary: bool = False,
    **keys: Any,
) -> Iterator[Union[str, bytes]]:
    """The output lines of a dataset file, each with its terminator (as iterating over
    a file gives them; ``bytes`` with ``binary=True``), byte-identical to ``rivumi-compact
    run PATH``. Rust reads, compacts and writes the file on other threads, a few MB ahead
    of the loop, with the GIL released; memory stays flat whatever the file's size. The
    configuration and the file are checked when this is called, not at the first line.
    ``on_bad`` as in :func:`compact_lines`: ``"raise"`` raises :class:`BadLineError` at
    the bad line, after every line before it; ``"keep"`` warns at the end.
    """
    _check_on_bad(on_bad)
    cfg, profile, input_format = _config(config, keys)
    _warn_inert(cfg, profile)
    lines = _native.file_lines(os.fspath(path), cfg, profile, input_format, on_bad, binary)
    return _follow(lines, on_bad)


def _follow(lines: Any, on_bad: str) -> Iterator[Union[str, bytes]]:
    try:
        yield from lines
    except _native.BadLine as e:
        raise BadLineError(*e.args) from None
    if lines.bad and on_bad == "keep":
        warnings.warn(f"{len(lines.bad)} bad line(s) echoed unchanged; the first: {lines.bad[0][1]}", stacklevel=2)


def dataset_map(
    config: Optional[Dict[str, Any]] = None, *, column: str = "messages", on_bad: str = "raise", **keys: Any
) -> Callable[[Dict[str, list]], Dict[str, list]]:
    """A function for ``datasets.Dataset.map(fn, batched=True)``: compacts the
    conversations of the ``column`` column of each batch (all at once, on every core)
    and adds what the engine did with each row: ``rivumi_action`` (``none``,
    ``history_fallback``, ...; ``None`` for a row it rejected), ``rivumi_tokens_before``
    and ``rivumi_tokens_after``.

    The configuration is checked here, when the function is made. ``on_bad``:
    ``"raise"`` raises :class:`BadLineError` (the row's index in its batch),
    ``"keep"`` leaves a rejected row as it was, ``"skip"`` leaves it out of the
    batch (every column is returned, shortened alike).
    """
    _check_on_bad(on_bad)
    cfg, profile, input_format = _config(config, keys)
    input_format = input_format or "openai"
    _native.check_config(cfg, profile, input_format)
    _warn_inert(cfg, profile)

    def fn(batch: Dict[str, list]) -> Dict[str, list]:
        if column not in batch:
            raise KeyError(f"the batch has no column {column!r} (columns: {', '.join(map(str, batch))}); name it with column=")
        conversations = batch[column]
        if isinstance(conversations, list) and conversations and isinstance(conversations[0], dict):
            # One row's messages, not a batch of rows: map was called without batched=True.
            raise TypeError(
                "dataset_map's function takes a batch of rows: call ds.map(fn, batched=True) "
                f"(it was given one row: column {column!r} holds its messages)"
            )
        import json

        rows = [json.dumps({"messages": m}, ensure_ascii=False) for m in conversations]
        out, bad, figures = _native.compact_lines(rows, cfg, profile, input_format)
        rejected = dict(bad)
        if bad and on_bad == "raise":
            raise BadLineError(*bad[0])
        compacted = [m if i in rejected else json.loads(line)["messages"] for i, (line, m) in enumerate(zip(out, conversations))]
        result = dict(batch) if on_bad == "skip" and rejected else {}
        result[column] = compacted
        result["rivumi_action"] = [f[0] if f else None for f in figures]
        result["rivumi_tokens_before"] = [f[1] if f else None for f in figures]
        result["rivumi_tokens_after"] = [f[2] if f else None for f in figures]
        if on_bad == "skip" and rejected:
            result = {k: [v for i, v in enumerate(values) if i not in rejected] for k, values in result.items()}
        return result

    return fn


def decide(path: str, config: Optional[Dict[str, Any]] = None, **keys: Any) -> Dict[str, Any]:
    """The decision for a transcript file of any format the tool reads, as ``decide
    --json`` prints it (with its per-turn rows)."""
    import json

    cfg, profile, input_format = _config(config, keys)
    return json.loads(_native.decide(str(path), cfg, profile, input_format))


def replay(path: str, config: Optional[Dict[str, Any]] = None, **keys: Any) -> Dict[str, Any]:
    """``replay --json`` of a transcript file: ``{"points": [...], "summary": {...}}``,
    under the profile of the agent that wrote it unless ``profile`` names one."""
    import json

    cfg, profile, input_format = _config(config, keys)
    lines = [json.loads(line) for line in _native.replay(str(path), cfg, profile, input_format).splitlines()]
    return {"points": lines[:-1], "summary": lines[-1]}
