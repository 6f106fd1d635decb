"""Turning one file's bytes into text, or saying why it cannot be a document.

Decisions: a NUL byte in the first 8 KiB marks a binary file (as git and grep do); UTF-8 (with or without
BOM) first, then cp1252 (the usual encoding of old Western text, e.g. Usenet posts), then Latin-1, which
never fails. Whitespace-only text counts as empty.
"""

from __future__ import annotations

from pathlib import Path

BINARY_SNIFF_BYTES = 8192


def is_binary(data: bytes) -> bool:
    return b"\x00" in data[:BINARY_SNIFF_BYTES]


def decode_text(data: bytes) -> tuple[str, bool]:
    """Return (text, used_fallback). used_fallback is True when the bytes were not valid UTF-8."""
    try:
        return data.decode("utf-8-sig"), False
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252"), True
    except UnicodeDecodeError:
        return data.decode("latin-1"), True


def classify_file(path: Path, max_bytes: int) -> tuple[str | None, str | None, bool]:
    """Read one file. Returns (text, skip_reason, used_fallback); text is None when skip_reason is set.

    skip_reason is one of "too_large", "unreadable", "binary", "empty".
    """
    try:
        size = path.stat().st_size
        if size > max_bytes:
            return None, "too_large", False
        data = path.read_bytes()
    except OSError:
        return None, "unreadable", False
    if is_binary(data):
        return None, "binary", False
    text, fallback = decode_text(data)
    if not text.strip():
        return None, "empty", fallback
    return text, None, fallback
