import os
from typing import Any, Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Tuple, Union

__version__: str

class BadLineError(ValueError):
    index: int
    message: str

class Row(NamedTuple):
    line: Union[str, bytes]
    action: Optional[str]
    tokens_before: Optional[int]
    tokens_after: Optional[int]
    rejected: Optional[str]

class FileSummary(NamedTuple):
    lines: int
    changed: int
    shortened: int
    blank: int
    bad: int
    over_target: int
    rejected: List[Tuple[int, str]]
    warnings: List[Tuple[int, str]]

_Path = Union[str, "os.PathLike[str]"]

def compact(messages: List[Dict[str, Any]], config: Optional[Dict[str, Any]] = ..., **keys: Any) -> Dict[str, Any]: ...
def compact_lines(
    lines: Iterable[Union[str, bytes]],
    config: Optional[Dict[str, Any]] = ...,
    *,
    on_bad: str = ...,
    results: bool = ...,
    **keys: Any,
) -> Union[List[Union[str, bytes]], List[Row]]: ...
def compact_file(
    path: _Path, output: _Path, config: Optional[Dict[str, Any]] = ..., *, on_bad: str = ..., **keys: Any
) -> FileSummary: ...
def iter_file(
    path: _Path, config: Optional[Dict[str, Any]] = ..., *, on_bad: str = ..., binary: bool = ..., **keys: Any
) -> Iterator[Union[str, bytes]]: ...
def dataset_map(
    config: Optional[Dict[str, Any]] = ..., *, column: str = ..., on_bad: str = ..., **keys: Any
) -> Callable[[Dict[str, list]], Dict[str, list]]: ...
def decide(path: str, config: Optional[Dict[str, Any]] = ..., **keys: Any) -> Dict[str, Any]: ...
def replay(path: str, config: Optional[Dict[str, Any]] = ..., **keys: Any) -> Dict[str, Any]: ...
