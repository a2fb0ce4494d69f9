#!/usr/bin/env bash
# The main job on the embedded default: build the database from ../shared, retrieve evidence for the user's
# reference chunk with F, then a small eval of every strategy that runs without an LLM (the first 50 queries of
# each set). It installs only what it runs (`install.sh --main`: no torch, no test tools, no LLM parts); the
# full eval and the LLM parts are one command each, printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED="${GODOT_RAG_SHARED:-../shared}"
bash scripts/install.sh --main
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export PATH="$PWD/.venv/bin:$PATH"  # godot-rag and python from the project's own environment
godot-rag ingest --pages "$SHARED/godot_docs/pages" --renames "$SHARED/godot_docs/renames_3_to_4.jsonl" --out work/godot_rag/jsonl
godot-rag load --jsonl work/godot_rag/jsonl
godot-rag embed
godot-rag status
python -c "import json,sys; print(json.loads(open(sys.argv[1]).readline())['chunk_text'])" "$SHARED/eval/reference.jsonl" > work/reference.gd
godot-rag retrieve work/reference.gd --strategy F --k 5 --explain
# ranx's metrics in plain Python: on a new .venv numba would first compile them (minutes on 2 cores, more than these
# 251 queries take); the full eval below compiles them once.
NUMBA_DISABLE_JIT=1 godot-rag eval --queries "$SHARED"/eval/*.jsonl --strategies A,B,C,D,F --limit 50 --out eval-out/main
cat >&2 <<DONE

The eval above read the first 50 queries of each set. Every query of every set (2,383 chunks, A to F but E;
about 12 minutes on 2 cores):
  .venv/bin/godot-rag eval --queries $SHARED/eval/*.jsonl --strategies A,B,C,D,F --out eval-out/full
The LLM parts (strategy E and F's Qwen judge; llama-cpp-python compiles once, 2 to 9 minutes):
  bash scripts/install.sh --llm-only
DONE
