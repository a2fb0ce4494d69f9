"""The fitted guide model on disk (`guide_model.json`, written by `godot-rag fit-guides`): the weights of
`retrieve/docs_features.py`'s features, the threshold, the page acceptance rates and the member use shares,
with the digest of the judged data it was fitted on."""
from __future__ import annotations

from pathlib import Path

from .model_files import read_model_file, write_model_file

SHIPPED = Path(__file__).with_name("guide_model.json")


class GuideModelError(ValueError):
    """A model file that cannot be read: names the file and the field."""


def read(path: Path = SHIPPED) -> dict | None:
    data = read_model_file(path, GuideModelError, "guide model")
    if data is None:
        return None
    for name, kind in (("weights", dict), ("bias", (int, float)), ("threshold", (int, float))):
        if not isinstance(data.get(name), kind):
            raise GuideModelError(f"{path}: field '{name}' is missing or of the wrong type")
    return data


def write(data: dict, path: Path = SHIPPED) -> None:
    write_model_file(data, path)
