"""`python -m godot_rag.cli`."""
from . import main

main()
