"""Explanations over a result: why a record came back or not (`why`), and `Class.member` lookups (`lookup`)."""
