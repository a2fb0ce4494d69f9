"""The README stays true: every command in its Commands block has --help, and every setting it names exists."""
import re
import subprocess
import sys

from conftest import ROOT
from godot_rag.retrieve.engine.config import RetrieveConfig

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _commands_block() -> str:
    section = README.split("## Commands", 1)[1]
    return section.split("```bash", 1)[1].split("```", 1)[0]


def test_every_readme_command_has_help():
    subcommands = sorted(set(re.findall(r"^godot-rag ([\w-]+)", _commands_block(), re.M)))
    assert {"ingest", "load", "embed", "status", "retrieve", "serve", "eval", "strategies"} <= set(subcommands)
    for sub in subcommands:
        r = subprocess.run([sys.executable, "-m", "godot_rag.cli", sub, "--help"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and "Usage:" in r.stdout, (sub, r.stderr[-300:])


def test_every_setting_the_readme_names_exists():
    named = set(re.findall(r"--set (\w+)=", README)) | set(re.findall(r"\(`(\w+)`, \d", README))
    valid = set(RetrieveConfig.model_fields)
    assert named and named <= valid, named - valid
    for name in ("godot_version", "extends", "k_api"):
        assert name in README and name in valid
