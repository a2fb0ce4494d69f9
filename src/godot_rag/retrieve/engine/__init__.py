"""The engine every strategy runs on: the per-query state (`state`), stages and their contracts (`stage`),
what each stage records (`trace`), the result model (`types`), the settings (`config`) and the code digest
of a stored result (`fingerprint`)."""
