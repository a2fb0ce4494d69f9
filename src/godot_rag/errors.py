"""The error a user's settings or request context raise, and how a message quotes a piece of the input."""
from __future__ import annotations


class ConfigError(ValueError):
    pass


def clip(text, limit: int = 60) -> str:
    """A name from the input, as an error message may quote it: never the whole of a huge value."""
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
