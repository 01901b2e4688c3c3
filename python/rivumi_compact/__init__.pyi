from typing import Any, Callable, Dict, Iterable, List, Optional, Union

__version__: str

class BadLineError(ValueError):
    index: int
    message: str

def compact(messages: List[Dict[str, Any]], config: Optional[Dict[str, Any]] = ..., **keys: Any) -> Dict[str, Any]: ...
def compact_lines(
    lines: Iterable[Union[str, bytes]], config: Optional[Dict[str, Any]] = ..., *, on_bad: str = ..., **keys: Any
) -> List[Union[str, bytes]]: ...
def dataset_map(
    config: Optional[Dict[str, Any]] = ..., *, column: str = ..., **keys: Any
) -> Callable[[Dict[str, list]], Dict[str, list]]: ...
def decide(path: str, config: Optional[Dict[str, Any]] = ..., **keys: Any) -> Dict[str, Any]: ...
def replay(path: str, config: Optional[Dict[str, Any]] = ..., **keys: Any) -> Dict[str, Any]: ...
