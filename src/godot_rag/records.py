"""The user's records: field names and types for the three JSONL files and tables (the contract that
ingest writes and store/ and retrieve/ read), and the one home of each text made from a record."""
from __future__ import annotations

# The metadata ingest derives from a docs record's code and prose for matching (ingest/record_api.py): kept
# in the JSONL, the DB and the `full` format; the `records` format leaves it out (retrieval data, not evidence).
DERIVED_METADATA = ("code_uses", "code_classes", "code_callbacks", "code_declares", "code_globals", "code_constructs",
                    "mentions")

# (field, type); "?" marks a field that may be null. Types: text, text[], int, float, jsonb.
SCHEMA: dict[str, dict] = {
    "docs_chunks": {
        "file": "docs_chunks.jsonl",
        "key": "chunk_id",
        "fields": [
            ("chunk_id", "text"), ("doc_version", "text"), ("source_url", "text"), ("source_file", "text"),
            ("source_sha256", "text"), ("doc_type", "text"), ("symbol", "text?"), ("section_path", "text[]"),
            ("heading", "text"), ("content", "text"), ("code_blocks", "jsonb"), ("language_tags", "text[]"),
            ("godot_version_tags", "text[]"), ("api_symbols", "text[]"), ("token_count", "int"), ("metadata", "jsonb"),
        ],
    },
    "api_mapping": {
        "file": "api_mapping.jsonl",
        "key": "mapping_id",
        "fields": [
            ("mapping_id", "text"), ("source_api", "text"), ("target_api", "text"), ("change_type", "text"),
            ("godot_from", "text"), ("godot_to", "text"), ("confidence", "float"), ("evidence_chunk_ids", "text[]"),
            ("match_terms", "text[]"), ("notes", "text"), ("negative_patterns", "text[]"),
        ],
    },
    "label_prototypes": {
        "file": "label_prototypes.jsonl",
        "key": "prototype_id",
        "fields": [
            ("prototype_id", "text"), ("label", "text"), ("task_type", "text"), ("input_pattern", "text"),
            ("expected_finding", "text"), ("recommended_action", "text"), ("evidence_mapping_ids", "text[]"),
            ("evidence_chunk_ids", "text[]"), ("severity", "text"), ("validator_rules", "jsonb"),
        ],
    },
}
TABLES = list(SCHEMA)


def search_text(table: str, rec: dict) -> str:
    """The text that BM25, the tsvector and the embedding all see for one record."""
    if table == "docs_chunks":
        return " / ".join(rec.get("section_path") or []) + "\n" + rec["content"]
    if table == "api_mapping":
        return (f"{rec['source_api']} -> {rec['target_api']} ({rec['change_type']})\n"
                + " ".join(t for t in rec["match_terms"] if not t.startswith("re:")) + "\n" + rec["notes"])
    return (f"{rec['label'].replace('_', ' ')}: {rec['expected_finding']}\n{rec['recommended_action']}")


def record_code(rec: dict) -> str:
    """A docs chunk's GDScript (C# blocks left out): what the code-clone match compares against."""
    return "\n".join(b.get("code", "") for b in rec.get("code_blocks") or [] if b.get("language") != "csharp")


UNLABELLED_CODE = ("text", "", None)  # a block's language as the pages write it when they do not say


def record_gdscript(rec: dict) -> list[tuple[str, bool]]:
    """A docs chunk's GDScript blocks, each on its own, with whether the page labels it GDScript (an unlabelled
    block may be GDScript too): what ingest parses and resolves. A shell, GLSL or C++ block is no GDScript, and
    joined to the GDScript it would break the parse of it all."""
    return [(b.get("code", ""), b.get("language") == "gdscript") for b in rec.get("code_blocks") or []
            if b.get("language") == "gdscript" or b.get("language") in UNLABELLED_CODE]


def evidence_text(rec: dict) -> str:
    """A docs chunk's prose and GDScript: where the validator looks for the chunk's literals."""
    return (rec.get("content") or "") + "\n" + record_code(rec)


def model_text(table: str, rec: dict, limit: int = 1500) -> str:
    """The record as a reranker or the Qwen judge reads it next to the chunk."""
    if table == "docs_chunks":
        return (" / ".join(rec.get("section_path") or []) + "\n" + rec.get("content", ""))[:limit]
    if table == "api_mapping":
        return f"{rec['source_api']} -> {rec['target_api']} ({rec['change_type']}): {rec['notes']}"[:limit]
    return f"{rec['label']}: {rec['expected_finding']} {rec['recommended_action']}"[:limit]


class RecordError(ValueError):
    """A bad JSONL line: names the file, the line and the field."""

    def __init__(self, file: str, line: int, field: str | None, message: str):
        self.file, self.line, self.field = file, line, field
        where = f"{file}:{line}" + (f": field '{field}'" if field else "")
        super().__init__(f"{where}: {message}")


def _type_ok(value, kind: str) -> bool:
    if value is None:
        return kind.endswith("?")
    kind = kind.rstrip("?")
    if kind == "text":
        return isinstance(value, str)
    if kind == "text[]":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "jsonb":
        return isinstance(value, (dict, list))
    raise AssertionError(kind)


def _first_nul(value, where: str = "") -> str | None:
    """Where a NUL character sits in a field value (strings, lists and JSON objects), else None."""
    if isinstance(value, str):
        return (where or "in the text") if "\x00" in value else None
    if isinstance(value, list):
        return next((w for i, v in enumerate(value) if (w := _first_nul(v, f"{where}[{i}]")) is not None), None)
    if isinstance(value, dict):
        return next((w for k, v in value.items() if (w := _first_nul(v, f"{where}.{k}")) is not None), None)
    return None


def validate_record(table: str, rec, file: str, line: int) -> dict:
    if not isinstance(rec, dict):
        raise RecordError(file, line, None, "each line must be a JSON object")
    for name, kind in SCHEMA[table]["fields"]:
        if name not in rec:
            raise RecordError(file, line, name, "required field is missing")
        if not _type_ok(rec[name], kind):
            raise RecordError(file, line, name, f"expected {kind.rstrip('?')}, got {type(rec[name]).__name__}")
    for name, _ in SCHEMA[table]["fields"]:
        bad = _first_nul(rec[name])
        if bad is not None:
            raise RecordError(file, line, name, f"holds a NUL byte ({bad}); PostgreSQL text cannot store it")
    key = SCHEMA[table]["key"]
    if not rec[key]:
        raise RecordError(file, line, key, "the id must not be empty")
    return rec
