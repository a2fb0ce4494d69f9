"""Understanding GDScript and the Godot 4 class reference, shared by ingest and retrieve (it imports neither).

- `facts`: one chunk's GDScript facts (code, comment and string regions, calls, chains, declarations), parsed once.
- `classref`: the class reference: classes, inheritance, members and their types.
- `resolve`: a chunk's API uses resolved to `Class.member`.
- `tokenize`: the code-aware tokenizer BM25 reads.
- `project`: the project around a chunk (its symbols, file, `extends`, Godot version).
- `record_api`: what a docs record's own code and prose use, resolved like a chunk.
- `chunk_text`: the one check of a chunk's text, at every entry point.
"""
