"""Thin click CLI over the library: every command maps to one library call. The group is in base.py; each
module of this package adds its commands to it."""
from __future__ import annotations

from . import data, evaluate, ranker, retrieve, scan, serve  # noqa: F401 - importing a module adds its commands
from .base import main

__all__ = ["main"]
