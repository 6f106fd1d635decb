"""Reuters-21578, ModApte split, as multi-label JSONL corpora: train.jsonl and test.jsonl of {"text": ...,
"labels": [...]}.

    python -m benchmarks.corpora.reuters SGM_FOLDER OUT_FOLDER

SGM_FOLDER holds the 22 files reut2-000.sgm .. reut2-021.sgm of the public distribution (UCI KDD archive; copies on
GitHub, e.g. Arthur-sauvage/Reuter's data/). Train: LEWISSPLIT="TRAIN", test: LEWISSPLIT="TEST", both
TOPICS="YES" with at least one topic; only the 90 topics with at least one training and one test document are
kept, and a document left with none of them is dropped: 7,769 training and 3,019 test documents in the usual
count (one more, 7,770, where a document whose text sits outside <BODY> keeps its <TEXT>, as here). The text is
the title and the body (or, for TYPE="BRIEF"/"UNPROC", the <TEXT> as it stands). Some copies hold a truncated
reut2-003.sgm: every file but the last must hold 1,000 documents, or the script stops.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sys
from pathlib import Path

DOCUMENT = re.compile(r"<REUTERS(?P<attributes>[^>]*)>(?P<body>.*?)</REUTERS>", re.S)
ATTRIBUTE = re.compile(r'(\w+)="([^"]*)"')


def _tag(name: str, text: str) -> str | None:
    found = re.search(rf"<{name}[^>]*>(.*?)</{name}>", text, re.S)
    return None if found is None else found.group(1)


def documents(folder: Path):
    """-> (split, topics, text) of every document of the 22 files."""
    files = sorted(folder.glob("reut2-*.sgm"))
    if len(files) != 22:
        sys.exit(f"{folder} holds {len(files)} reut2-*.sgm files, not 22")
    for number, path in enumerate(files):
        raw = path.read_bytes().decode("latin-1")
        found = list(DOCUMENT.finditer(raw))
        if number < 21 and len(found) != 1000:
            sys.exit(f"{path} holds {len(found)} documents, not 1,000: a truncated copy; fetch another")
        for match in found:
            attributes = dict(ATTRIBUTE.findall(match.group("attributes")))
            body = match.group("body")
            topics = re.findall(r"<D>(.*?)</D>", _tag("TOPICS", body) or "")
            text_block = _tag("TEXT", body) or ""
            title, main = _tag("TITLE", text_block), _tag("BODY", text_block)
            if main is None:  # TYPE="BRIEF" / "UNPROC": the text as it stands
                text = re.sub(r"<[^>]+>", " ", text_block)
            else:
                text = f"{title or ''}\n{main}"
            text = html.unescape(text.replace("\x03", "")).strip()
            yield attributes.get("LEWISSPLIT"), attributes.get("TOPICS"), topics, text


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Reuters-21578 (ModApte) SGML files -> train.jsonl and test.jsonl of label sets"
    )
    parser.add_argument("source", type=Path, help="folder of the reut2-*.sgm files")
    parser.add_argument("out", type=Path, help="folder to write train.jsonl and test.jsonl into")
    args = parser.parse_args()
    source, out = args.source, args.out
    splits = {"TRAIN": [], "TEST": []}
    for split, has_topics, topics, text in documents(source):
        if split in splits and has_topics == "YES" and topics and text:
            splits[split].append((topics, text))
    kept = {t for topics, _ in splits["TRAIN"] for t in topics} & {t for topics, _ in splits["TEST"] for t in topics}
    out.mkdir(parents=True, exist_ok=True)
    for split, name in (("TRAIN", "train.jsonl"), ("TEST", "test.jsonl")):
        rows = [(sorted(set(topics) & kept), text) for topics, text in splits[split]]
        rows = [(topics, text) for topics, text in rows if topics]
        with (out / name).open("w") as handle:
            for topics, text in rows:
                handle.write(json.dumps({"text": text, "labels": topics}) + "\n")
        print(f"{name}: {len(rows)} documents")
    print(f"topics: {len(kept)}")


if __name__ == "__main__":
    main()
