"""What a query is made of: the chunk's GDScript facts and resolved API uses (`parse`), its segments and
BM25 tokens (`segment`)."""
