"""Read evaluation query files (the ../shared/eval format); a bad line names file, line and field."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..jsonlines import iter_jsonl


class QueryFileError(ValueError):
    pass


@dataclass
class Query:
    id: str
    chunk_text: str
    relevant_pages: dict[str, int]
    relevant_mappings: list[tuple[str, str, str]]
    variant: str | None = None
    demoted_pages: list[str] = field(default_factory=list)
    expect_no_mappings: bool = False
    file: str = ""
    relevant_api: list[str] = field(default_factory=list)  # `Class.member` the chunk calls (real-code sets)
    relevant_api_pages: list[str] = field(default_factory=list)  # the class pages documenting them


def _need(cond: bool, path: Path, n: int, fieldname: str, msg: str) -> None:
    if not cond:
        raise QueryFileError(f"{path}:{n}: field '{fieldname}': {msg}")


def read_queries(path: Path, limit: int | None = None) -> list[Query]:
    out = []
    for n, rec in iter_jsonl(path, lambda n, msg: QueryFileError(f"{path}:{n}: {msg}")):
        if not isinstance(rec, dict):
            raise QueryFileError(f"{path}:{n}: each line must be a JSON object")
        _need(isinstance(rec.get("id"), str) and rec["id"], path, n, "id", "required non-empty string")
        _need(isinstance(rec.get("chunk_text"), str) and rec["chunk_text"].strip(), path, n, "chunk_text",
              "required non-empty string")
        pages = rec.get("relevant_pages", {})
        _need(isinstance(pages, dict) and all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
                                              for k, v in pages.items()), path, n, "relevant_pages",
              "must be an object of page path -> integer grade")
        maps = rec.get("relevant_mappings", [])
        _need(isinstance(maps, list) and all(isinstance(m, list) and len(m) == 3 and all(isinstance(x, str) for x in m)
                                             for m in maps), path, n, "relevant_mappings",
              "must be a list of [table, from, to] string triples")
        demoted = rec.get("demoted_pages", [])
        _need(isinstance(demoted, list) and all(isinstance(x, str) for x in demoted), path, n, "demoted_pages",
              "must be a list of page paths")
        variant = rec.get("variant")
        _need(variant is None or isinstance(variant, str), path, n, "variant", "must be a string")
        enm = rec.get("expect_no_mappings", False)
        _need(isinstance(enm, bool), path, n, "expect_no_mappings", "must be true or false")
        api = rec.get("relevant_api", [])
        _need(isinstance(api, list) and all(isinstance(x, str) for x in api), path, n, "relevant_api",
              "must be a list of Class.member strings")
        api_pages = rec.get("relevant_api_pages", [])
        _need(isinstance(api_pages, list) and all(isinstance(x, str) for x in api_pages), path, n,
              "relevant_api_pages", "must be a list of page paths")
        out.append(Query(rec["id"], rec["chunk_text"], pages, [tuple(m) for m in maps], variant, demoted, enm,
                         Path(path).name, api, api_pages))
        if limit and len(out) >= limit:
            break
    return out
