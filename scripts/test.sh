#!/usr/bin/env bash
# The test command: install, then the whole suite (real PostgreSQL, real models, real Chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
python3 -m pytest -q -p no:cacheprovider tests "$@"
