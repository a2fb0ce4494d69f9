"""A fitted model's JSON file: read it (None where there is none; a file that is no JSON is one error naming it) and
write it whole (a reader never sees it half-written). `guide_model.py` and `ranker_model.py` check their fields."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def read_model_file(path: Path, error: type[ValueError], what: str) -> Any:
    """The file's JSON, or None where no file is; `error` names the file when it cannot be read as JSON."""
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise error(f"{path}: not a {what} file ({e})") from None


def write_model_file(data: dict[str, Any], path: Path) -> None:
    tmp = Path(path).with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)
