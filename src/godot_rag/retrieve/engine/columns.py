"""How the web page shows each stage that says something about each record: one column of its matrix per stage."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Column(BaseModel):
    """How the web page shows a stage that says something about each record: one column of its matrix."""
    model_config = ConfigDict(frozen=True)
    label: str  # the column header
    unit: str = ""  # under the header; `{name}` is a field of the stage's log (`{method}`: maxnorm)
    score: str | None = None  # the info field a cell's number and bar show
    unit_scale: bool = False  # the score lies in [0, 1]: bars against 1, not against the column's best
    lossy: bool = False  # a record can be gone after this stage (a reject, a cut)
    source: bool = False  # a list of its own: a record missing here was not found by it


# The record stages' columns, for the page (GET /api/strategies names each stage's column); a stage without
# one is query-level (its log is shown, not a column).
STAGE_COLUMNS: dict[str, Column] = {
    "tsquery": Column(label="tsquery", unit="rank·score", score="ts_rank_cd", source=True),
    "bm25": Column(label="bm25", unit="rank·score", score="score", source=True),
    "embedding": Column(label="embed", unit="cosine", score="cosine", unit_scale=True, source=True),
    "union": Column(label="union", unit="source"),
    "fuse": Column(label="fuse", unit="{method}", score="score"),
    "codematch": Column(label="clone", unit="ratio", score="ratio", unit_scale=True),
    "merge": Column(label="merge", unit="segments", score="score"),
    "rerank": Column(label="rerank", unit="{backend}", score="score"),
    "shortlist": Column(label="short", unit="top {kept}", lossy=True),
    "api": Column(label="api", score="score", source=True),
    "validate": Column(label="validate", unit="verdict", score="confidence", unit_scale=True, lossy=True),
    "check": Column(label="check", unit="findings", source=True),
    "judge": Column(label="judge", score="confidence", unit_scale=True, lossy=True),
    "rank": Column(label="ranker", unit="P(direct)", score="p", unit_scale=True, lossy=True),
    "score": Column(label="score", unit="×conf", score="score"),  # noqa: RUF001 - the multiplication sign, as the table shows it
    "cut": Column(label="final", unit="rank", lossy=True),
}
