"""`godot-rag scan`: a whole Godot project through the retriever, with findings, SARIF and a report."""
