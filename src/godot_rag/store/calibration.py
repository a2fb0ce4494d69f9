"""Judge calibrations on disk: per model (name and weights sha256), per table, the ROC AUC measured on
the judge set, the threshold chosen from the dev curve, and what the judge may do with that model.

A file the user names (`--judge-calibration`, env GODOT_RAG_JUDGE_CALIBRATION) is the only one read;
otherwise the user's own (written by `godot-rag judge calibrate`), then the one shipped with the package.
"""
from __future__ import annotations

import json
from pathlib import Path

SHIPPED = Path(__file__).with_name("judge_calibration.json")


class CalibrationError(ValueError):
    """A calibration file that cannot be read: names the file and the field."""


def user_path() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("godot-rag", appauthor=False)) / "judge_calibration.json"


def read(path: Path) -> list[dict]:
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        return []
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CalibrationError(f"{path}: not a judge calibration file ({e})") from None
    entries = data.get("calibrations") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise CalibrationError(f"{path}: field 'calibrations' must be a list")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("model"), str) or not isinstance(entry.get("tables"), dict):
            raise CalibrationError(f"{path}: calibrations[{i}] needs 'model' (text) and 'tables' (object)")
        for table, t in entry["tables"].items():
            where = f"{path}: calibrations[{i}].tables.{table}"
            if not isinstance(t, dict):
                raise CalibrationError(f"{where} must be an object")
            if t.get("mode", "annotate") not in ("decide", "annotate"):
                raise CalibrationError(f"{where}.mode must be 'decide' or 'annotate'")
            thr = t.get("threshold")
            if thr is not None and (not _number(thr) or not 0 <= thr <= 1):
                raise CalibrationError(f"{where}.threshold must be null or a number in [0, 1]")
            band = t.get("band")
            if band is not None and not (isinstance(band, list) and len(band) == 2 and all(map(_number, band))):
                raise CalibrationError(f"{where}.band must be null or two numbers")
    return entries


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == x


def same_model(entry: dict, identity: dict) -> bool:
    """The same weights (sha256) when the model has a hash; the same name when it has none (a server's)."""
    if identity.get("sha256"):
        return entry.get("sha256") == identity["sha256"]
    return entry.get("sha256") is None and entry["model"] == identity["model"]


def find(identity: dict, path: Path | None = None, prompt: str | None = None) -> tuple[dict | None, str | None, list[str]]:
    """(calibration, file, skipped) for this model. A file the user names is the only one read.

    P(yes) depends on the question as much as on the weights: an entry measured with another prompt
    (`prompt` differs) is skipped and named in `skipped`; an entry without one (written by hand) holds
    for any prompt."""
    skipped = []
    for source in ([path] if path else [user_path(), SHIPPED]):
        for e in read(source):
            if not same_model(e, identity):
                continue
            if prompt and e.get("prompt") not in (None, prompt):
                skipped.append(f"{Path(source).name}: measured with prompt {e.get('prompt')}, not {prompt}")
                continue
            return e, str(source), skipped
    return None, None, skipped


def save(entry: dict, path: Path | None = None) -> Path:
    """Replaces the entry of the same model and hash; written atomically, other models kept."""
    path = Path(path or user_path())
    entries = [e for e in read(path) if not same_model(e, entry)]
    entries.append(entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"calibrations": entries}, indent=2) + "\n")
    tmp.replace(path)
    return path
