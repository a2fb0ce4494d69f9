"""What the migration stage reaches besides the engine's resources: the converter's renames."""
from __future__ import annotations

from typing import Protocol

from ..engine.resources import Resources
from .version import ConverterRenames


class MigrationResources(Resources, Protocol):
    def renames(self) -> ConverterRenames: ...
