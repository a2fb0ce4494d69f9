"""The fitted ranker on disk (`ranker_model.json`, written by `godot-rag fit-ranker`): per docs group the weights of
its named features, the bias and the threshold chosen out of fold, with the digest of the graded data it was fitted
on and the out-of-fold figures."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

SHIPPED = Path(__file__).with_name("ranker_model.json")


class RankerModelError(ValueError):
    """A model file that cannot be read: names the file and the field."""


def read(path: Path = SHIPPED) -> dict[str, Any] | None:
    """The model, or None where no file is."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RankerModelError(f"{path}: not a ranker model file ({e})") from None
    groups = data.get("groups") if isinstance(data, dict) else None
    if not isinstance(groups, dict) or not all(isinstance(g.get("weights"), dict) for g in groups.values()):
        raise RankerModelError(f"{path}: field 'groups' is missing or of the wrong type")
    return dict(data)


def write(data: dict[str, Any], path: Path = SHIPPED) -> None:
    tmp = Path(path).with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)
