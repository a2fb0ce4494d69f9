"""The pre-commit hook (.pre-commit-hooks.yaml): its command, as pre-commit runs it, on a fresh git
repository: the staged .gd files it selects, the exit code, and the SARIF it leaves."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys

import yaml

from conftest import ROOT

GODOT3 = ('extends KinematicBody2D\n\nfunc _physics_process(delta):\n\tmove_and_slide(Vector2())\n'
          '\tyield(get_tree(), "idle_frame")\n')
GODOT4 = "extends CharacterBody2D\n\nfunc _physics_process(delta):\n\tmove_and_slide()\n"


def run_hook(hook: dict, repo, env) -> subprocess.CompletedProcess:
    """What pre-commit does for a `language: system` hook: the entry, its args, then the staged files
    its `files` pattern selects, run from the repository's top."""
    staged = subprocess.run(["git", "diff", "--cached", "--name-only"], cwd=repo, capture_output=True, text=True,
                            check=True).stdout.split()
    files = [f for f in staged if re.search(hook["files"], f)]
    entry = shlex.split(hook["entry"])
    assert entry[0] == "godot-rag"
    cmd = [sys.executable, "-m", "godot_rag.cli", *entry[1:], *hook.get("args", []), *files]
    return subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=300)


def test_pre_commit_hook_fails_on_a_godot3_file_and_writes_sarif(fixture_db, tmp_path):
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "godot-rag-scan")
    assert hook["language"] == "system" and hook["pass_filenames"] and hook["require_serial"]
    repo = tmp_path / "game"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / "project.godot").write_text("config_version=4\n")
    (repo / "player.gd").write_text(GODOT3)
    (repo / "notes.md").write_text("not a script\n")
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    env = dict(os.environ, GODOT_RAG_DATA=str(fixture_db.data_dir))

    r = run_hook(hook, repo, env)
    assert r.returncode == 1, r.stderr[-2000:]
    assert "FAIL" in r.stdout and "Traceback" not in r.stderr
    sarif = json.loads((repo / ".godot-rag-scan" / "findings.sarif").read_text())
    results = sarif["runs"][0]["results"]
    assert results and all(x["level"] == "error" for x in results)
    where = {(x["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
              x["locations"][0]["physicalLocation"]["region"]["startLine"]) for x in results}
    assert ("player.gd", 1) in where and ("player.gd", 5) in where  # the class and the yield

    # A commit of Godot 4 code only passes; the unchanged Godot 3 file is not part of it.
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"], cwd=repo, check=True)
    (repo / "enemy.gd").write_text(GODOT4)
    subprocess.run(["git", "add", "enemy.gd"], cwd=repo, check=True)
    r = run_hook(hook, repo, env)
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]
    sarif = json.loads((repo / ".godot-rag-scan" / "findings.sarif").read_text())
    assert sarif["runs"][0]["results"] == []
    assert json.loads((repo / ".godot-rag-scan" / "scan.json").read_text())["files_scanned"] == 1
