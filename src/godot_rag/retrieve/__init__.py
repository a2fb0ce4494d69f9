"""Strategies A-F: one raw GDScript chunk in, ranked evidence records and a trace out.

- `engine`: the per-query state, stages and their contracts, the trace, the result model, the settings.
- `query`: what the query is made of (parse, resolve, segment, tokenize).
- `recall`: candidate lists and their order (tsquery, BM25, embedding, fusion, code-clone match, reranker).
- `migration`: version awareness and the occurrence rules of `api_mapping` records.
- `evidence`: the direct-evidence validator, its rule tables, the guide model, the judge, the final score and cut.
- `explain`: why a record came back or not, and `Class.member` lookups.
- `strategies`: the strategy table; `pipeline`: the `Retriever` that runs it over one database.
"""
