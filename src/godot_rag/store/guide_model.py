"""The fitted guide model on disk (`guide_model.json`, written by `godot-rag fit-guides`): the weights of
`retrieve/docs_features.py`'s features, the threshold, the page acceptance rates and the member use shares,
with the digest of the judged data it was fitted on."""
from __future__ import annotations

import json
import os
from pathlib import Path

SHIPPED = Path(__file__).with_name("guide_model.json")


class GuideModelError(ValueError):
    """A model file that cannot be read: names the file and the field."""


def read(path: Path = SHIPPED) -> dict | None:
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise GuideModelError(f"{path}: not a guide model file ({e})") from None
    for name, kind in (("weights", dict), ("bias", (int, float)), ("threshold", (int, float))):
        if not isinstance(data.get(name), kind):
            raise GuideModelError(f"{path}: field '{name}' is missing or of the wrong type")
    return data


def write(data: dict, path: Path = SHIPPED) -> None:
    tmp = Path(path).with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)
