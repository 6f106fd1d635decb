"""The house rule on size: a product function over 80 lines or 8 parameters says why beside it (a comment on its
signature, the line above it or the first lines of its body)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("textclf", "pipelines", "db", "pallas_kernels")
MAX_LINES, MAX_PARAMETERS = 80, 8


def _parameters(node: ast.FunctionDef) -> int:
    args = node.args
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    count = len(names) + (args.vararg is not None) + (args.kwarg is not None)
    return count - (names[:1] in (["self"], ["cls"]))


def _says_why(node: ast.FunctionDef, lines: list[str]) -> bool:
    """A comment on the signature's lines, on the line above the def (or its decorators), or between the signature
    and the first statement after the docstring."""
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    body = (
        node.body[1]
        if len(node.body) > 1 and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
        else node.body[0]
    )
    signature = lines[node.lineno - 1 : node.body[0].lineno - 1]
    nearby = [lines[first - 2]] if first > 1 else []
    nearby += signature + lines[node.body[0].lineno - 1 : body.lineno - 1]
    return any("#" in line for line in nearby)


def _oversized():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            lines = path.read_text().splitlines()
            for node in ast.walk(ast.parse("\n".join(lines))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    size = node.end_lineno - node.lineno + 1
                    if size > MAX_LINES or _parameters(node) > MAX_PARAMETERS:
                        yield path.relative_to(ROOT), node, lines


@pytest.mark.parametrize("package", PACKAGES)
def test_large_functions_say_why(package):
    silent = [
        f"{path}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines, {_parameters(node)} parameters)"
        for path, node, lines in _oversized()
        if path.parts[0] == package and not _says_why(node, lines)
    ]
    assert not silent, "functions over 80 lines or 8 parameters without a reason beside them:\n" + "\n".join(silent)
