"""Version awareness: the chunk's Godot 3 and 4 markers, and the named rules that decide each occurrence of an
api_mapping record's Godot 3 name (`version_rules`, over `project_rules` and `chunk_rules`)."""
