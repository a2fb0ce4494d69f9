"""The direct-evidence validator: class-reference entries for resolved uses (`api_source`), the rule tables
(`validate`, `docs_evidence`), the guide model (`docs_features`), the optional Qwen judge, and the final score
and cut (`final`)."""
