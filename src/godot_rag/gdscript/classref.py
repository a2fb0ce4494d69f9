"""The Godot 4 API as the class reference defines it: classes, inheritance, members
(method, property, signal, constant, enum, ...) with their documented types.

Built from the `classes/class_*` pages at ingest (`ingest/classref.py`), stored in the
database beside the records (`godot_rag_meta`, key `class_reference`), and read here.
Nothing in it is typed in by hand: a name is Godot 4 API exactly when a class page
documents it.
"""
from __future__ import annotations

from functools import cached_property

GLOBAL_SCOPES = ("@GlobalScope", "@GDScript")
# Types a member can have that name no class: what the reference writes for "nothing".
NO_TYPE = {"", "void", "Variant"}
MEMBERS_CACHED = 100_000  # member lookups kept (a long batch meets new names; the cache starts again when full)


class ClassReference:
    def __init__(self, data: dict):
        # {"classes": {name: {"inherits": str|None, "page": str, "members": {name: {"kind", "type"}}}}}
        self.classes: dict[str, dict] = data.get("classes", {})

    def to_dict(self) -> dict:
        return {"classes": self.classes}

    def __bool__(self) -> bool:
        return bool(self.classes)

    def has_class(self, name: str) -> bool:
        return name in self.classes and not name.startswith("@")

    def page(self, cls: str) -> str | None:
        return (self.classes.get(cls) or {}).get("page")

    def lineage(self, cls: str | None) -> list[str]:
        """`cls` and its ancestors, nearest first. Cached per class (the reference does not change once read;
        member lookups walk it hundreds of times per query): callers must not modify the list."""
        cache: dict[str | None, list[str]] = self.__dict__.setdefault("_lineages", {})
        found = cache.get(cls)
        if found is not None:
            return found
        out: list[str] = []
        seen: set[str] = set()
        walk = cls
        while walk and walk in self.classes and walk not in seen:
            out.append(walk)
            seen.add(walk)
            walk = self.classes[walk].get("inherits")
        cache[cls] = out
        return out

    def member(self, cls: str, name: str, *, code: bool = False) -> tuple[str, dict] | None:
        """(owner class, member info) for `cls.name`, walking up the inheritance chain. `code`: as code
        that writes `obj.name` reaches it, where theme items (reached only through the theme API) do not
        hide an ancestor's member (`Button`'s `pressed` stylebox, `BaseButton`'s `pressed` signal). Cached, as
        `lineage` is: a query looks up a few hundred, most of them again and again."""
        cache: dict[tuple, tuple[str, dict] | None] = self.__dict__.setdefault("_members", {})
        key = (cls, name, code)
        if key in cache:
            return cache[key]
        found = None
        for owner in self.lineage(cls):
            info = self.classes[owner]["members"].get(name)
            if info is not None and not (code and info.get("kind") == "theme_property"):
                found = owner, info
                break
        if len(cache) >= MEMBERS_CACHED:
            cache.clear()
        cache[key] = found
        return found

    def value_type(self, cls: str) -> bool:
        """Whether `cls` is a built-in value type (`Vector2`, `Array`, `Dictionary`, `String`): a class with no parent
        that is not `Object` (every engine object class descends from it) nor a global scope."""
        info = self.classes.get(cls)
        return info is not None and not info.get("inherits") and cls != "Object" and not cls.startswith("@")

    def coordinate(self, api: str) -> bool:
        """Whether `Class.member` is a coordinate of a built-in value type: a one-letter property of a class with no
        parent (`Vector3.x`, `Basis.z`, `Color.r`, `Plane.d`). Every vector and colour has them, so sharing one says
        nothing about what two pieces of code do (a gyro's `Basis.rotated` and a player's `Basis.looking_at`)."""
        cls, _, name = api.partition(".")
        info = self.classes.get(cls)
        if len(name) != 1 or info is None or info.get("inherits"):
            return False
        return (info["members"].get(name) or {}).get("kind") == "property"

    def related(self, a: str, b: str | None) -> bool:
        """Whether one class is the other or an ancestor of it (no class is related to nothing)."""
        return a in self.lineage(b) or b in self.lineage(a)

    def global_member(self, name: str) -> tuple[str, dict] | None:
        """A global function, constant or singleton (`load`, `deg_to_rad`, `PI`, `Input`)."""
        for scope in GLOBAL_SCOPES:
            info = (self.classes.get(scope) or {}).get("members", {}).get(name)
            if info is not None:
                return scope, info
        return None

    @cached_property
    def owners(self) -> dict[str, set[str]]:
        """member name -> the classes that document it (a property's setter and getter included)."""
        return self._owners(accessors=True)

    @cached_property
    def named_owners(self) -> dict[str, set[str]]:
        """member name -> the classes that document it under its own entry: no setter or getter.
        By name alone, with no receiver to resolve, `set_autowrap()` is Godot 3's Label method, not
        Godot 4's AcceptDialog setter: Godot 4 code writes the property (`dialog_autowrap = true`)."""
        return self._owners(accessors=False)

    def _owners(self, accessors: bool) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for cls, info in self.classes.items():
            for m, member in info["members"].items():
                if accessors or "accessor_of" not in member:
                    out.setdefault(m, set()).add(cls)
        return out

    def resolver_map(self, name: str) -> dict[str, str]:
        """class -> the class whose entry documents `name` for it (walking inheritance); cached per name."""
        cache = self.__dict__.setdefault("_resolver_maps", {})
        if name not in cache:
            out: dict[str, str] = {}
            # Most bare calls are the script's own functions: a name no class documents needs no walk of
            # every class's lineage (a new one in nearly every chunk, so the cache does not absorb it).
            for cls in self.classes if name in self.owners else ():
                if cls.startswith("@"):
                    continue
                found = self.member(cls, name)
                # A property's getter or setter says little about which class a script is (`get_world_3d`
                # is Node3D's method and Viewport's accessor); only documented methods infer it.
                if found is not None and found[1]["kind"] == "method" and "accessor_of" not in found[1]:
                    out[cls] = found[0]
            cache[name] = out
        return cache[name]

    def on_subclass(self, cls: str, name: str) -> str | None:
        """A class below `cls` that documents `name` (`pressed` on InputEventKey for an InputEvent)."""
        for owner in sorted(self.owners.get(name, ())):
            if cls in self.lineage(owner)[1:]:
                return owner
        return None

    def exists(self, name: str) -> bool:
        """Whether Godot 4 has this name by itself: a class, or a member of some class (see `named_owners`)."""
        return self.has_class(name) or name in self.named_owners

    def signals_named(self, name: str) -> list[str]:
        """`Class.name` for each class that documents a signal called `name`."""
        return sorted(f"{c}.{name}" for c in self.named_owners.get(name, ())
                      if self.classes[c]["members"][name].get("kind") == "signal")

    def where(self, name: str, limit: int = 4) -> list[str]:
        """Where Godot 4 documents `name` (`Viewport`, `CanvasItem.hide`), for traces and notes."""
        if self.has_class(name):
            return [name]
        return sorted(f"{c}.{name}" for c in self.named_owners.get(name, ()))[:limit]

    @staticmethod
    def type_of(info: dict) -> str | None:
        t = (info or {}).get("type") or ""
        return None if t in NO_TYPE else t
