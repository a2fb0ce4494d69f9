#!/usr/bin/env bash
# The test command: install into ./.venv, then lint and type checks, then the whole suite (real PostgreSQL,
# real models, real Chromium).
# `--fast` skips the slow, LLM and browser tests, for the edit-test loop; the default run is complete.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
args=()
for a in "$@"; do
  if [ "$a" = "--fast" ]; then args+=(-m "not slow and not llm and not browser"); else args+=("$a"); fi
done
.venv/bin/ruff check src tests bench   # lint: the rules in pyproject.toml
.venv/bin/mypy src              # types
PYTHONPATH=src .venv/bin/lint-imports --no-cache | tail -4   # the layers: the import-linter contracts in pyproject.toml
.venv/bin/python -m pytest -q -p no:cacheprovider tests "${args[@]}"
