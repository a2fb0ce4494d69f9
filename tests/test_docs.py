"""The docs stay true, both ways.

docs -> code: every command in the README's Commands block has --help, and every setting it names exists.
code -> docs: every CLI command and option, every RetrieveConfig setting, every record field, every named rule and
every module is documented (the lists are computed from the code here, so something new and undocumented fails a test)."""
import re
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner

from conftest import ROOT
from godot_rag.cli import main
from godot_rag.retrieve.engine.config import RetrieveConfig
from godot_rag.retrieve.explain.rules import rules_markdown

README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = ROOT / "docs"
PACKAGE = ROOT / "src" / "godot_rag"
MAX_README_LINES = 400


def _commands_block() -> str:
    section = README.split("## Commands", 1)[1]
    return section.split("```bash", 1)[1].split("```", 1)[0]


def _commands(group: click.Group = main, prefix: tuple[str, ...] = ()):
    """(path, command) for every command of the CLI, groups and their subcommands included, hidden ones left out."""
    for name, cmd in sorted(group.commands.items()):
        if getattr(cmd, "hidden", False):
            continue
        yield (*prefix, name), cmd
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, (*prefix, name))


# docs -> code

def test_every_readme_command_has_help():
    subcommands = sorted(set(re.findall(r"^godot-rag ([\w-]+)", _commands_block(), re.M)))
    assert {"ingest", "load", "embed", "status", "retrieve", "serve", "eval", "strategies", "rules"} <= set(subcommands)
    for sub in subcommands:
        r = subprocess.run([sys.executable, "-m", "godot_rag.cli", sub, "--help"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and "Usage:" in r.stdout, (sub, r.stderr[-300:])


def test_every_setting_the_readme_names_exists():
    named = set(re.findall(r"--set (\w+)=", README)) | set(re.findall(r"\(`(\w+)`, \d", README))
    named |= set(re.findall(r"^\| `(\w+)` \|", README.split("## Configuration", 1)[1].split("\n## ", 1)[0], re.M))
    valid = set(RetrieveConfig.model_fields)
    assert named and named <= valid, named - valid
    for name in ("godot_version", "extends", "k_api"):
        assert name in README and name in valid


def test_the_readme_is_a_manual():
    lines = README.count("\n") + (not README.endswith("\n"))
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines; at most {MAX_README_LINES} (history goes to docs/)"
    assert not re.search(r"\bstop \d+", README), "no stop numbers in the README"
    hashes = re.findall(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b", README)
    assert not hashes, f"no commit hashes in the README: {hashes}"


# code -> docs

def test_every_cli_command_and_option_is_in_the_readme():
    missing = []
    for path, cmd in _commands():
        if not re.search(rf"godot-rag {re.escape(' '.join(path))}(?![\w-])", README):
            missing.append("godot-rag " + " ".join(path))
        for param in cmd.params:
            if isinstance(param, click.Option) and not param.hidden:
                for opt in param.opts + param.secondary_opts:
                    if opt.startswith("--") and opt not in ("--help", "--version") and not re.search(
                            re.escape(opt) + r"(?![\w-])", README):
                        missing.append(f"godot-rag {' '.join(path)} {opt}")
    assert not missing, "not in README.md: " + ", ".join(missing)


def test_every_retrieve_setting_is_in_the_readme():
    missing = [name for name in RetrieveConfig.model_fields if not re.search(rf"`{name}`", README)]
    assert not missing, "RetrieveConfig settings not in README.md: " + ", ".join(missing)


def test_every_record_field_is_in_the_readme():
    from godot_rag.records import SCHEMA

    missing = [f"{table}.{name}" for table, spec in SCHEMA.items()
               for name in [spec["file"], spec["key"], *(field for field, _ in spec["fields"])]
               if f"`{name}`" not in README and f"`{name.removesuffix('.jsonl')}`" not in README]
    assert not missing, "record fields not in README.md: " + ", ".join(missing)


def test_docs_rules_md_is_the_rules_command_output():
    out = CliRunner().invoke(main, ["rules", "--markdown"])
    assert out.exit_code == 0, out.output
    assert out.output == rules_markdown()
    written = (DOCS / "rules.md").read_text(encoding="utf-8")
    assert written == out.output, ("docs/rules.md is generated: run "
                                   "`godot-rag rules --markdown > docs/rules.md`")
    plain = CliRunner().invoke(main, ["rules"])
    assert plain.exit_code == 0 and plain.output.count("\n") >= 40


def test_every_named_rule_is_in_docs_rules_md():
    from godot_rag.retrieve.explain.rules import rule_rows

    written = (DOCS / "rules.md").read_text(encoding="utf-8")
    rows = rule_rows()
    assert len(rows) >= 40
    missing = [r["rule"] for r in rows if f"`{r['rule']}`" not in written]
    assert not missing, missing


def test_every_module_is_in_docs_architecture_md():
    # Matched by file name (`bm25.py`), not by path: the package's folder layout is being changed, and a module
    # keeps its file name when it moves. A module that is new, or renamed, must be described there.
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    modules = sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py") if p.name != "__init__.py")
    assert len(modules) > 50
    missing = [m for m in modules if not re.search(rf"(?<![\w.]){re.escape(Path(m).name)}\b", text)]
    assert not missing, "modules not in docs/architecture.md: " + ", ".join(missing)


def test_every_stage_of_f_is_in_docs_architecture_md():
    from godot_rag.retrieve.strategies import describe

    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    stages = [st["name"] for st in describe()["F"]["stages"]]
    missing = [s for s in stages if f"`{s}`" not in text]
    assert not missing, missing
