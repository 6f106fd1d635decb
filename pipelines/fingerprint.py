"""A corpus's fingerprint: the sha256 of every (label, text) in reading order, from per-document digests that
workers compute on their shares and the reader joins in order."""

from __future__ import annotations

import hashlib


def document_digest(label: str, text: str) -> bytes:
    """sha256 of one (label, text): 32 bytes."""
    digest = _label_hash(label)
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.digest()


def _label_hash(label: str):
    """document_digest's sha256 once it has taken the label and its separator, before the text."""
    digest = hashlib.sha256(label.encode())
    digest.update(b"\x00")
    return digest


class Fingerprint:
    """sha256 of the documents' digests (document_digest) in reading order: equal corpora, equal fingerprints
    (the vector and search caches' key). A digest a document first, so that workers each reading a share of a
    file digest their own documents and this process joins 32 bytes a document, not the texts."""

    def __init__(self):
        self._digest = hashlib.sha256()

    def add(self, label: str, text: str) -> None:
        self._digest.update(document_digest(label, text))

    def add_digests(self, digests: bytes) -> None:
        """Documents digested elsewhere: their digests, joined in reading order."""
        self._digest.update(digests)

    def hexdigest(self) -> str:
        return self._digest.hexdigest()
