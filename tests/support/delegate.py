"""A stand-in that forwards every call to a real adapter but those a test overrides."""

from __future__ import annotations

from typing import Any


class Delegate:
    """Subclass, override the methods under test, and reach the real one as ``self.inner``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
