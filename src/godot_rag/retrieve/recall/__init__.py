"""Candidate lists and their order: A's tsquery, BM25, the embedding, the union and fused score, the
code-clone match, the reranker, E's search profile, and the api_mapping prefilter."""
