"""Understanding GDScript and the Godot 4 class reference, shared by ingest and retrieve (it imports neither).

- `facts`: one chunk's GDScript facts (code, comment and string regions, calls, chains, declarations), parsed once
  (`parse_chunk`), from
  - `lexicon`: what an identifier, a chain, a string or a comment looks like, and the reserved words;
  - `elements`: the facts' parts (chains, calls, names, declarations, bindings, version markers);
  - `text_lines`: offsets to lines and columns, and regions blanked;
  - `tree_nodes`, `tree_walk`, `tree_declarations`, `tree_uses`: the tree-sitter-gdscript walk;
  - `regex_facts`: the regular-expression fallback for text the parser cannot read.
- `classref`: the class reference: classes, inheritance, members and their types.
- `reference_facts`: a class's or member's Deprecated or Experimental mark, signatures (`signatures`) and reference
  entry.
- `api_check`: the API findings of a chunk's resolved uses (deprecated, experimental, missing member, argument
  count), with `suggest`: the closest real members to a missing one.
- `resolve`: a chunk's API uses resolved to `Class.member` (`resolve_uses`), from
  - `resolution`: what it finds (`ApiUse`, `Unresolved`, `Resolution`) and one run's state;
  - `own_class`: the script's own class, given or inferred, and the bare names that are its members;
  - `chain_roots`: the class an access chain starts from.
- `tokenize`: the code-aware tokenizer BM25 reads.
- `project`: the project around a chunk (its symbols, file, `extends`, Godot version).
- `record_api`: what a docs record's own code and prose use, resolved like a chunk.
- `chunk_text`: the one check of a chunk's text, at every entry point.
"""
