"""The fitted ranker on disk (`ranker_model.json`, written by `godot-rag fit-ranker`): per docs group the weights of
its named features, the bias and the threshold chosen out of fold, with the digest of the graded data it was fitted
on and the out-of-fold figures."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .model_files import read_model_file, write_model_file

SHIPPED = Path(__file__).with_name("ranker_model.json")


class RankerModelError(ValueError):
    """A model file that cannot be read: names the file and the field."""


def read(path: Path = SHIPPED) -> dict[str, Any] | None:
    """The model, or None where no file is."""
    data = read_model_file(path, RankerModelError, "ranker model")
    if data is None:
        return None
    groups = data.get("groups") if isinstance(data, dict) else None
    if not isinstance(groups, dict) or not all(isinstance(g, dict) for g in groups.values()):
        raise RankerModelError(f"{path}: field 'groups' is missing or of the wrong type")
    for name, group in groups.items():
        for field, kind in (("weights", dict), ("bias", (int, float)), ("threshold", (int, float))):
            if not isinstance(group.get(field), kind):
                raise RankerModelError(f"{path}: field 'groups.{name}.{field}' is missing or of the wrong type")
    return dict(data)


def write(data: dict[str, Any], path: Path = SHIPPED) -> None:
    write_model_file(data, path)
