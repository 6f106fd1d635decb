"""Benchmarks that cannot rot: every name a benchmark imports from the project (at the top of its module or inside a
function) exists, and every benchmark command answers --help. The benchmarks themselves need data and time; what
they import from the product is what changes under them."""

from __future__ import annotations

import ast
import contextlib
import importlib
import io
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

PROJECT = ("textclf", "pipelines", "db", "pallas_kernels", "benchmarks")
MODULES = sorted(path for path in (REPO / "benchmarks").rglob("*.py") if path.name != "__init__.py")


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts)


def _imports(path: Path, package: str | None = None) -> list[tuple[str, str | None, int]]:
    """(module, name or None, line) of every import statement in the file, nested ones included; relative imports
    resolved against the file's package (default: its folder's under the repository)."""
    package = package or _module_name(path).rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            found += [(base, alias.name, node.lineno) for alias in node.names]
    return found


def _missing(module: str, name: str | None) -> str | None:
    """What of `from module import name` (or `import module`) does not exist, or None."""
    try:
        imported = importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name and not error.name.startswith(PROJECT):
            return None  # a peer or GPU library this machine lacks: the product's names are what is checked here
        return f"module {module}: {error}"
    if name is None or name == "*" or hasattr(imported, name):
        return None
    try:
        importlib.import_module(f"{module}.{name}")
        return None
    except ModuleNotFoundError:
        return f"{module} has no {name}"


@pytest.mark.parametrize("path", MODULES, ids=_module_name)
def test_every_name_a_benchmark_imports_from_the_project_exists(path):
    wrong = [
        f"line {line}: {problem}"
        for module, name, line in _imports(path)
        if module.startswith(PROJECT) and (problem := _missing(module, name))
    ]
    assert not wrong, f"{path.relative_to(REPO)}: " + "; ".join(wrong)


COMMANDS = [path for path in MODULES if 'if __name__ == "__main__"' in path.read_text(encoding="utf-8")]


@pytest.mark.parametrize("path", COMMANDS, ids=_module_name)
def test_every_benchmark_command_answers_help(path, monkeypatch):
    """`python -m benchmarks.X.Y --help`, run in this process (importing each in a fresh interpreter would cost
    the suite a minute): exit 0 with a usage line."""
    try:
        module = importlib.import_module(_module_name(path))
    except ModuleNotFoundError as error:
        if error.name and not error.name.startswith(PROJECT):
            pytest.skip(f"needs {error.name}, which this machine lacks")
        raise
    monkeypatch.setattr(sys, "argv", [_module_name(path), "--help"])
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), pytest.raises(SystemExit) as exited:
        module.main()
    assert exited.value.code in (0, None) and "usage:" in printed.getvalue()


def test_the_import_reader_finds_nested_and_relative_imports(tmp_path):
    """The check above can fail: a nested import of a name the project lacks is reported."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def f():\n    from textclf.frontends.daemon import no_such_function\n    from .peers import main\n"
    )
    found = _imports(probe, "benchmarks.accuracy")
    assert found == [("textclf.frontends.daemon", "no_such_function", 2), ("benchmarks.accuracy.peers", "main", 3)]
    assert _missing(*found[0][:2]) == "textclf.frontends.daemon has no no_such_function"
    assert _missing("textclf.frontends.daemon", "publish_file") is None
