"""The direct-evidence validator: class-reference entries for resolved uses (`api_source`), the rule tables
(`validate`, `docs_evidence`, `docs_overrules`), the guide features (`docs_stats`, `chunk_side`, `docs_features`,
`guide_copy`) and the fitted model that decides on them (`guide_model`, `guide_decision`), the optional Qwen judge,
and the final score and cut (`final`)."""
