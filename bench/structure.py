"""The structure figures of a checkout: modules over 400 lines, functions over 40 lines or with more than 6
parameters, and functions with no or only some annotations (an AST count; `self` and `cls` are not parameters).

    python bench/structure.py [SRC_DIR] [--list]
"""
import argparse
import ast
import json
from pathlib import Path

MAX_MODULE_LINES, MAX_FUNCTION_LINES, MAX_PARAMETERS = 400, 40, 6


def function_rows(path: Path) -> list[dict]:
    rows = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            params = [a for a in args if a.arg not in ("self", "cls")]
            annotated = [a.annotation is not None for a in params] + [node.returns is not None]
            rows.append({"where": f"{path}:{node.lineno} {node.name}", "lines": node.end_lineno - node.lineno + 1,
                         "params": len(params), "typed": "all" if all(annotated) else "some" if any(annotated) else "none"})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("src", nargs="?", default="src/godot_rag")
    ap.add_argument("--list", action="store_true", help="name each module and function over a limit")
    args = ap.parse_args()
    files = sorted(Path(args.src).rglob("*.py"))
    big = [(len(p.read_text(encoding="utf-8").splitlines()), str(p)) for p in files]
    big = [b for b in big if b[0] > MAX_MODULE_LINES]
    rows = [r for p in files for r in function_rows(p)]
    long_ = [r for r in rows if r["lines"] > MAX_FUNCTION_LINES]
    many = [r for r in rows if r["params"] > MAX_PARAMETERS]
    out = {"modules": len(files), "modules_over_400_lines": len(big), "functions": len(rows),
           "functions_over_40_lines": len(long_), "functions_over_6_parameters": len(many),
           "functions_untyped": sum(r["typed"] == "none" for r in rows),
           "functions_partly_typed": sum(r["typed"] == "some" for r in rows)}
    if args.list:
        out |= {"big_modules": big, "long_functions": [(r["lines"], r["where"]) for r in long_],
                "many_parameters": [(r["params"], r["where"]) for r in many]}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
