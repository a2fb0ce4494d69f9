"""A digest of what the gdscript package makes of real code: every fact and every resolution, to show that a
refactor of src/godot_rag/gdscript/ changes nothing.

    PYTHONPATH=src python bench/facts_digest.py [--demos ../shared/realcode/godot-demo-projects] [--per-file]

For every `.gd` file of the demo projects (Godot 4 and 3), three texts are parsed: the whole file, each of the
scan's chunks of it, and the file with every line cut to half its length (mostly broken, so the regex fallback
reads it). Of each, the full facts (every field, the derived views and `summary()`) and the resolution through the
class reference, alone and with the project around the file (its symbol table, as the scan builds it, two hops),
are written as canonical JSON and hashed. Prints one sha256 per file (with --per-file) and one over all files."""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from godot_rag.gdscript.classref import ClassReference
from godot_rag.gdscript.facts import GDScriptFacts, parse_chunk
from godot_rag.gdscript.project import RequestContext
from godot_rag.gdscript.resolve import extends_hint, resolve_uses
from godot_rag.ingest.classref import build_class_reference
from godot_rag.ingest.markdown import parse_page
from godot_rag.scan.chunking import chunk_text
from godot_rag.scan.symbols import ProjectSymbols, file_context, load_project_symbols

if TYPE_CHECKING:  # a type only: the script runs on the package before its split too
    from godot_rag.gdscript.resolution import Resolution

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DEMOS = ROOT.parent / "shared" / "realcode" / "godot-demo-projects"
DEFAULT_PAGES = ROOT.parent / "shared" / "godot_docs" / "pages"
PARSERS: Counter[str] = Counter()  # texts read by each parser: both paths must be covered


def _plain(value: Any) -> Any:
    """JSON-ready, order-independent where the value is a set."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, set | frozenset):
        return sorted((_plain(v) for v in value), key=repr)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def facts_view(facts: GDScriptFacts) -> dict:
    """Every field of the facts, the views derived from them, and the trace's summary."""
    view = _plain(facts)
    view.update(code=facts.code, no_comments=facts.no_comments, identifiers=_plain(facts.identifiers),
                shapes=_plain(facts.shapes), csharp=facts.csharp, chain_texts=_plain(facts.chain_texts),
                declares_inner_class=facts.declares_inner_class, method_calls=_plain(facts.method_calls),
                summary=facts.summary(), votes=_plain(facts.version_votes()))
    return view


def resolution_view(res: Resolution) -> dict:
    return {"full": _plain(res), "trace": res.to_trace(), "alone": _plain(res.chunk_alone()), "apis": res.apis,
            "missing": _plain(res.missing())}


def text_view(text: str, ref: ClassReference, context: RequestContext | None) -> dict:
    facts = parse_chunk.__wrapped__(text)  # uncached: each text parsed afresh
    PARSERS[facts.parser] += 1
    with_project = resolve_uses(facts, ref, extends_hint(facts, None, context), 2,
                                project=context and context.index(), own_scope=context and context.own_scope())
    return {"facts": facts_view(facts), "alone": resolution_view(resolve_uses(facts, ref)),
            "project": resolution_view(with_project)}


def file_view(text: str, ref: ClassReference, context: RequestContext | None) -> dict:
    halved = "\n".join(line[: len(line) // 2] for line in text.split("\n"))
    return {"file": text_view(text, ref, context), "halved": text_view(halved, ref, None),
            "chunks": [text_view(c.text, ref, context) for c in chunk_text(text).chunks]}


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--demos", type=Path, default=DEFAULT_DEMOS)
    ap.add_argument("--pages", type=Path, default=DEFAULT_PAGES, help="the docs' markdown pages (classes__*.md)")
    ap.add_argument("--per-file", action="store_true")
    args = ap.parse_args()
    pages = [parse_page(f.name, f.read_text(encoding="utf-8")) for f in sorted(args.pages.glob("classes__*.md"))]
    ref = ClassReference(build_class_reference(pages))
    total = hashlib.sha256()
    tables: dict[Path, ProjectSymbols] = {}
    files = 0
    for path in sorted(args.demos.rglob("*.gd")):
        project_dir = next((d for d in path.parents if (d / "project.godot").is_file()), None)
        context = None
        if project_dir is not None:  # the project around the file, as the scan reads it
            if project_dir not in tables:
                tables[project_dir] = load_project_symbols(project_dir)
            context = file_context(tables[project_dir], path.relative_to(project_dir).as_posix())
        text = path.read_text(encoding="utf-8", errors="replace")
        file_digest = digest(file_view(text, ref, context))
        total.update(f"{path.relative_to(args.demos).as_posix()}:{file_digest}\n".encode())
        files += 1
        if args.per_file:
            print(file_digest, path.relative_to(args.demos).as_posix())
    print(f"{files} files, texts by parser {dict(sorted(PARSERS.items()))}  overall sha256 {total.hexdigest()}")


if __name__ == "__main__":
    main()
