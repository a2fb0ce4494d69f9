"""GDScript's words, as patterns: what an identifier, a chain, a string and a comment look like, and the reserved
words. Shared by the parsers, the tokenizer and the evidence checks that read raw text."""
from __future__ import annotations

import re

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"  # the one definition of a GDScript identifier
IDENT_RE = re.compile(IDENT)
STRING_RE = re.compile(r"[&^]?\"\"\"[\s\S]*?\"\"\"|[&^]?\"(?:[^\"\\\n]|\\.)*\"|[&^]?'(?:[^'\\\n]|\\.)*'")
COMMENT_RE = re.compile(r"#[^\n]*")
# A chain starts where a name does: without the look-behind, a name with no dot after it is tried again from
# each of its letters (the same matches, three times the time on the docs' text).
CHAIN_RE = re.compile(rf"(?<![A-Za-z_]){IDENT}(?:\.{IDENT})+")
DIGITS_RE = re.compile(r"\d+")
# A file extension after a name: `Player.tscn`, `Spatial.gd` (Godot's resource and script files, and common assets).
FILE_NAME_RE = re.compile(r"\.(?:gd|tscn|tres|scn|res|gdshader|shader|cs|import|godot|cfg|json|png|svg|jpg|jpeg|webp|"
                          r"ogg|wav|mp3|glb|gltf|obj|ttf|otf)(?![A-Za-z0-9_])")
# GDScript's reserved words (3 and 4): never an author's name (clone match), and no pointer to any one line.
KEYWORDS = frozenset({
    "if", "elif", "else", "for", "while", "match", "break", "continue", "pass", "return", "class", "class_name",
    "extends", "is", "in", "as", "self", "signal", "func", "static", "const", "enum", "var", "onready", "export",
    "setget", "tool", "breakpoint", "preload", "await", "yield", "assert", "void", "true", "false", "null", "and",
    "or", "not", "super", "remote", "master", "puppet", "remotesync", "mastersync", "puppetsync",
})


def bounded(name: str) -> re.Pattern[str]:
    """`name` at identifier boundaries: `AnimatedSprite` does not match inside `AnimatedSprite2D`."""
    return re.compile(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])")


def shape(ident: str) -> str:
    """Digit runs masked: `Vector3` and `Vector2` share the shape `Vector#`."""
    return DIGITS_RE.sub("#", ident)
