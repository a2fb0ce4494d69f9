#!/usr/bin/env bash
# The main job on the embedded default: build the database from ../shared, then retrieve
# evidence for the user's reference chunk with every strategy that runs without an LLM, and
# evaluate them on ../shared/eval. The LLM parts (E and F's Qwen judge) are installed last: none of
# this needs them, and compiling llama-cpp-python would otherwise come before the first answer.
# GODOT_RAG_NO_LLM=1 skips them (`bash scripts/install.sh --llm-only` adds them later).
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED="${GODOT_RAG_SHARED:-../shared}"
bash scripts/install.sh --core
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export PATH="$PWD/.venv/bin:$PATH"  # godot-rag and python from the project's own environment
godot-rag ingest --pages "$SHARED/godot_docs/pages" --renames "$SHARED/godot_docs/renames_3_to_4.jsonl" --out work/godot_rag/jsonl
godot-rag load --jsonl work/godot_rag/jsonl
godot-rag embed
godot-rag status
python -c "import json,sys; print(json.loads(open(sys.argv[1]).readline())['chunk_text'])" "$SHARED/eval/reference.jsonl" > work/reference.gd
godot-rag retrieve work/reference.gd --strategy F --k 5 --explain
godot-rag eval --queries "$SHARED"/eval/*.jsonl --strategies A,B,C,D,F --out eval-out/main
if [ "${GODOT_RAG_NO_LLM:-0}" != "1" ]; then
  echo "installing the LLM parts for strategy E and the Qwen judge (scripts/install.sh --llm-only)" >&2
  bash scripts/install.sh --llm-only
fi
