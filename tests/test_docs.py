"""Every shell and Python block of README.md and docs/*.md runs without an error, as a reader would paste it.

Each file's blocks run in order, in one fresh folder that holds what the docs assume of the repository folder
(textclf/sample_corpus, examples/) plus train.jsonl / test.jsonl (the sample corpus as JSON Lines), with an
empty data dir. A block right after `<!-- docs-test: skip: REASON -->` is not run; REASON must say why (a GPU,
several hosts, the public datasets)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BLOCK = re.compile(r"(<!-- docs-test: skip: (?P<reason>[^>]+?) -->\n)?```(?P<lang>bash|python)\n(?P<code>.*?)```", re.S)


def blocks(path: Path) -> list[tuple[str, str, str | None]]:
    """(language, code, skip reason or None) of every bash/python block, in order."""
    return [(m["lang"], m["code"], m["reason"]) for m in BLOCK.finditer(path.read_text(encoding="utf-8"))]


def docs_workspace(folder: Path) -> None:
    """What the docs' examples assume of the repository folder: the sample corpus, examples/, and train.jsonl /
    test.jsonl (the sample corpus as JSON Lines, two thirds / one third)."""
    shutil.copytree(REPO / "textclf" / "sample_corpus", folder / "textclf" / "sample_corpus")
    shutil.copytree(REPO / "examples", folder / "examples")
    records = [
        {"text": f.read_text(encoding="utf-8"), "label": f.parent.name}
        for f in sorted((REPO / "textclf" / "sample_corpus").glob("*/*"))
    ]
    for name, rows in (("train.jsonl", records[0::3] + records[1::3]), ("test.jsonl", records[2::3])):
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_every_doc_has_runnable_blocks_and_skips_say_why():
    assert (REPO / "docs").is_dir() and len(DOCS) >= 5
    for path in DOCS:
        for _, code, reason in blocks(path):
            assert reason is None or len(reason.split()) >= 2, f"{path.name}: a skip needs a reason"
    assert any(reason is None for path in DOCS for _, _, reason in blocks(path))


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_the_blocks_of_a_doc_run(path, tmp_path):
    runnable = [(lang, code) for lang, code, reason in blocks(path) if reason is None]
    if not runnable:
        pytest.skip(f"{path.name}: every block needs what this machine lacks (see its skip reasons)")
    docs_workspace(tmp_path)
    env = {
        **os.environ,
        "TEXTCLF_HOME": str(tmp_path / "home"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(REPO),
        "TEXTCLF_DB_TIMEOUT": "10",
    }
    env.pop("TEXTCLF_DB", None)
    for number, (lang, code) in enumerate(runnable, 1):
        command = ["bash", "-euo", "pipefail", "-c", code] if lang == "bash" else [sys.executable, "-c", code]
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (
            f"{path.name}, block {number} ({lang}) failed with {done.returncode}:\n"
            f"{code}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
        )
