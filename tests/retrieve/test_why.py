"""retrieve/why.py reads a result as the debugger page's why-not does (web/static/journey.js): for every
record of a result, the same outcome, losing stage, final rank and per-stage status, with the page's own
JavaScript run by Node on the same JSON."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from conftest import REFERENCE_CHUNK, ROOT
from godot_rag.retrieve.engine.config import RetrieveConfig
from godot_rag.retrieve.explain.why import why
from godot_rag.retrieve.strategies import describe

STATIC = ROOT / "src" / "godot_rag" / "web" / "static"
RUNNER = """
import { buildJourney, whyNot } from "./journey.js";
import { readFileSync } from "node:fs";
const { result, stageLists } = JSON.parse(readFileSync(0, "utf8"));
const j = buildJourney(result, stageLists);
const out = j.records.map((rec) => {
  const w = whyNot(j, rec.table, rec.id);
  return { table: rec.table, id: rec.id, outcome: rec.outcome, lost: rec.outcome === "returned" ? null : rec.lost,
           finalRank: rec.finalRank ?? null,
           steps: w.steps.map((s) => ({ stage: s.stage,
                                        status: s.off ? "off" : s.lost ? "lost here" : s.present ? "reached" : "absent",
                                        rank: s.present ? (s.rank ?? null) : null })) };
});
process.stdout.write(JSON.stringify(out));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js runs the page's journey.js")
@pytest.mark.parametrize("strategy,cfg", [("F", RetrieveConfig(k=3, rerank_top=4)), ("D", RetrieveConfig(k=5))])
def test_why_matches_the_pages_why_not(retriever, tmp_path, strategy, cfg):
    result = retriever.retrieve(REFERENCE_CHUNK, strategy, cfg, explain=True)
    for name in ("journey.js", "dom.js"):
        shutil.copy(STATIC / name, tmp_path / name)
    (tmp_path / "package.json").write_text('{"type": "module"}')
    (tmp_path / "run.js").write_text(RUNNER)
    payload = json.dumps({"result": result.model_dump(mode="json"), "stageLists": describe()})
    r = subprocess.run(["node", "run.js"], cwd=tmp_path, input=payload, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    page = json.loads(r.stdout)
    expected = {"returned", "rejected", "lost"} if strategy == "F" else {"returned", "cut"}
    assert len(page) > 10 and {p["outcome"] for p in page} >= expected
    for p in page:
        mine = next(w for w in why(result, p["id"]) if w.table == p["table"])
        assert (mine.outcome, mine.lost_at, mine.final_rank) == (p["outcome"], p["lost"], p["finalRank"]), p["id"]
        assert [(s.stage, s.status, s.rank) for s in mine.steps] == \
            [(s["stage"], s["status"], s["rank"]) for s in p["steps"]], p["id"]
