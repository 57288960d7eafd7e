"""Type stubs of the extension module (`strata/__init__.py` is the documented API)."""

from typing import Any, Dict, List, Optional, Tuple

__version__: str

class Error(Exception):
    """Every error Strata raises: its text is the diagnostic the `strata` command prints."""

class ParseError(Error):
    """The program text does not parse (a located diagnostic)."""

class VerifyError(Error):
    """The program does not verify: a type error (a located diagnostic)."""

class RunError(Error):
    """Running the program failed: a run-time error located in the program, or a native backend failure."""

class ArgumentError(Error):
    """An argument does not fit its parameter: a missing or unknown name, the wrong dtype or shape."""

class LinAlgError(ValueError):
    """A linear-algebra routine met a matrix it is not defined on: `inv` or `solve` of a singular one (numpy's `LinAlgError`, also a `ValueError`)."""

class AxisError(ValueError, IndexError):
    """An axis out of range for an array (a ValueError and an IndexError, as numpy's AxisError)."""

class Program:
    """A parsed and verified Strata module."""

    @property
    def name(self) -> str: ...
    def entries(self) -> List[str]: ...
    def signatures_json(self) -> str: ...
    def inputs(self, entry: str) -> List[str]: ...
    def outputs(self, entry: str) -> List[str]: ...
    def location(self, entry: str) -> Tuple[str, int]: ...
    def why_not_entry(self, name: str) -> str: ...
    def on_team(self, entry: str) -> bool: ...
    def run(
        self,
        entry: str,
        args: Dict[str, Any],
        backend: str = "auto",
        threads: Optional[int] = None,
        device: Optional[str] = None,
    ) -> List[Tuple[str, Any]]: ...
    def bind(
        self, entry: str, backend: str = "auto", threads: Optional[int] = None, device: Optional[str] = None
    ) -> Any: ...

def compile(text: str, name: str = "<string>") -> Program: ...

class _ArrayModule:
    """The array-API front end's functions (`strata.array_api` wraps them)."""

    def __getattr__(self, name: str) -> Any: ...

array: _ArrayModule
