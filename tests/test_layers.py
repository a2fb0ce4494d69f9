"""The package layers hold: no import cycle among the modules (imports under TYPE_CHECKING and inside functions
counted too), and the import-linter contracts in pyproject.toml are kept."""
import ast
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "src" / "godot_rag"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """module -> the project modules it imports, wherever the import stands in the file."""
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in files}
    for mod, path in files.items():
        package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    head = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(head + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            graph[mod] |= {t for t in targets if t in files and t != mod}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each a cycle of imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_among_the_modules():
    graph = import_graph()
    assert len(graph) > 100 and graph["godot_rag.retrieve.pipeline"]  # the walk sees the package
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle_through_a_type_checking_import(tmp_path):
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .pipeline import Retriever\n"
    node = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom) and n.level)
    assert node.module == "pipeline"  # ast.walk reaches imports under `if TYPE_CHECKING:` as import_graph reads them


def test_the_layer_contracts_are_kept():
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint, "import-linter is part of the test extras"
    r = subprocess.run([lint, "--no-cache"], capture_output=True, text=True, cwd=ROOT, timeout=300,
                       env={"PYTHONPATH": str(ROOT / "src"), "PATH": str(Path(sys.executable).parent)})
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "0 broken" in r.stdout and r.stdout.count("KEPT") >= 2
