"""Model files: one NumPy .npz archive (a zip), loaded with allow_pickle=False, so opening a model never
runs code. Members:
  header   JSON text: {"format": "textclf-model", "format_version": 1, "settings": ..., "labels": ...,
           "vectorizer": ..., "metadata": ...}
  w1 b1 w2 b2               network weights (float32)
  thresholds                a multi-label model's (C,) probability thresholds (format version 5)
  vectorizer.idf, vectorizer.terms   see pipelines/vectorize/vectorizer.py
  vectorizer.char_idf, vectorizer.char_terms   the character view, where the model has one (format version 2)
Image models (textclf/inference/image_model.py) add "kind": "cnn" and "image_shape" to the header and hold
conv<i>.w, conv<i>.b, fc_w, fc_b, out_w, out_b instead.
Writes go to a temporary file in the same folder, are flushed to disk, then renamed over the target, so a
crash mid-write leaves the previous model as it was.
"""

from __future__ import annotations

import json
import stat
import zipfile
from pathlib import Path

import numpy as np

from pipelines.files import write_arrays_atomically
from pipelines.vectorize import Vectorizer
from pipelines.word_counts import holds_unspaced
from textclf.inference.text_model import Model
from textclf.models.weights import Params
from textclf.settings import Settings
from textclf.errors import ArtifactError

FORMAT_NAME = "textclf-model"
# The newest format this textclf reads and writes. 2: a text model with a character view (Settings.char_ngrams);
# 3: a text model whose words open with the start token (Settings.start_token), which an older textclf would
# silently leave out of the documents it scores; 4: a text model whose words are split at each character of a
# script written without spaces (Settings.unspaced_as_characters: Chinese, Japanese, Thai, ...) and whose vocabulary
# holds such characters (or a "hashing" one, which has no vocabulary to tell): an older textclf would not find those
# terms in the text it scores. A vocabulary without them loses nothing there but the word that touches such a
# character in a document ("iphone" of "iphone手机"), so it keeps the lower version and stays readable by older
# textclf. Each model is written with the lowest version that reads it right (_text_format_version), so an older
# textclf reads the rest and refuses the others by their version ("upgrade textclf") rather than as a damaged file.
# 5: a multi-label model (its "thresholds" member: sigmoid outputs), which an older textclf would read as softmax.
# 6: a linear model (Settings.family "linear": no hidden layer, W2 (0, C)), which an older textclf would refuse as
# inconsistent. 7: a network with a linear model beside it (Settings.family "network+linear": W1's columns beyond
# W2's rows score the classes directly), which an older textclf would refuse as inconsistent.
FORMAT_VERSION = 7


def _text_format_version(vectorizer, multi_label: bool = False, family: str = "network") -> int:
    if family == "network+linear":
        return 7
    if family == "linear":
        return 6
    if multi_label:
        return 5
    if vectorizer.unspaced_as_characters and (vectorizer.terms is None or holds_unspaced(vectorizer.terms)):
        return 4
    return 3 if vectorizer.start_token else 2 if vectorizer.chars is not None else 1


def save_model(model: Model, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = {
        "format": FORMAT_NAME,
        "format_version": _text_format_version(model.vectorizer, model.multi_label, model.settings.family),
        "settings": model.settings.to_dict(),
        "labels": model.labels,
        "vectorizer": model.vectorizer.config(),
        "metadata": model.metadata,
    }
    arrays = {"header": np.array(json.dumps(header)), **model.params._asdict()}
    arrays.update({f"vectorizer.{k}": v for k, v in model.vectorizer.to_arrays().items()})
    if model.multi_label:
        arrays["thresholds"] = np.asarray(model.thresholds, np.float32)
    return write_arrays_atomically(path, arrays)


def save_image_model(model, path: str | Path) -> Path:
    """An ImageModel (textclf/inference/image_model.py): the same archive with header "kind": "cnn"."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = {
        "format": FORMAT_NAME,
        "format_version": 1,
        "kind": "cnn",
        "settings": model.settings.to_dict(),
        "labels": model.labels,
        "image_shape": list(model.image_shape),
        "metadata": model.metadata,
    }
    return write_arrays_atomically(path, {"header": np.array(json.dumps(header)), **model.to_arrays()})


def read_header(path: str | Path) -> dict:
    return _open(Path(path))[0]


def _open(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    if not path.exists():
        raise ArtifactError(
            f"model file '{path}' does not exist: train one with 'textclf train CORPUS' or pass --model"
        )
    if path.is_dir():
        raise ArtifactError(f"model path '{path}' is a folder: pass the model file itself")
    if not stat.S_ISREG(path.stat().st_mode):
        raise ArtifactError(
            f"model path '{path}' is not a regular file (a FIFO, device or socket): pass the model file itself"
        )
    _check_member_sizes(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
        header = json.loads(str(arrays.pop("header")))
    # The bytes are untrusted: whatever zipfile, zlib or NumPy's header parser raises on them (BadZipFile,
    # NotImplementedError for an unknown compression method, zlib.error, ValueError, ...) means the same thing.
    except Exception as exc:  # noqa: BLE001
        raise ArtifactError(
            f"model file '{path}' is corrupt or not a textclf model ({type(exc).__name__}): "
            "retrain it or pass the right --model"
        ) from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise ArtifactError(f"model file '{path}' is not a textclf model: pass a file written by 'textclf train'")
    version = header.get("format_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
        raise ArtifactError(
            f"model file '{path}' has format version {version}, newer than the {FORMAT_VERSION} this textclf "
            "reads: upgrade textclf (pip install -U textclf)"
        )
    _check_header(path, header)
    return header, arrays


# Each header field a model file may hold and the type its value must have (the format version here too; the
# labels have their own check, _labels): the one place a header is checked before any field is read.
HEADER_FIELDS = {
    "format": str,
    "kind": str,
    "settings": dict,
    "vectorizer": dict,
    "metadata": dict,
    "image_shape": list,
}


def _check_header(path: Path, header: dict) -> None:
    """Every header field of the type it must have; the format version a whole number from 1 to FORMAT_VERSION
    (a boolean is not one)."""
    for name, kind in HEADER_FIELDS.items():
        value = header.get(name)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            raise _damaged(path, f"its header's {name} is {type(value).__name__}, not {kind.__name__}")
    version = header.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= FORMAT_VERSION:
        raise _damaged(path, f"its format version {version!r} is not one from 1 to {FORMAT_VERSION}")


# Every member of a model file may inflate to at most this many times the file's size (plus MEMBER_SLACK): ours
# are stored uncompressed and float weights barely compress, so a file past it is damaged or hostile (a 3 MB file
# that inflates to 3 GB), and is refused before any member is inflated.
INFLATION_LIMIT = 20
MEMBER_SLACK = 1 << 20


def _damaged(path: Path, what: str) -> ArtifactError:
    return ArtifactError(f"model file '{path}' is damaged ({what}): retrain it, or pass the right --model")


def _check_member_sizes(path: Path) -> None:
    """The sizes the archive declares for its members, read from its directory, before anything is inflated."""
    try:
        with zipfile.ZipFile(path) as archive:
            declared = sum(info.file_size for info in archive.infolist())
    except Exception:  # noqa: BLE001 - not a zip at all: np.load says so below, in the same words as before
        return
    if declared > INFLATION_LIMIT * path.stat().st_size + MEMBER_SLACK:
        raise _damaged(path, f"its members would inflate to {declared:,} bytes from a file of {path.stat().st_size:,}")


def _check_arrays(path: Path, weights: dict[str, np.ndarray], others: dict[str, np.ndarray]) -> None:
    """Weights exactly float32 and finite; every other numeric array finite (a NaN weight predicts NaN); a
    multi-label model's thresholds probabilities, from 0 to 1."""
    thresholds = others.get("thresholds")
    if (
        thresholds is not None
        and thresholds.dtype.kind == "f"
        and np.isfinite(thresholds).all()
        and (thresholds.size and (thresholds.min() < 0 or thresholds.max() > 1))
    ):
        raise _damaged(path, "its thresholds are not probabilities from 0 to 1")
    for name, array in weights.items():
        if array.dtype != np.float32:
            raise _damaged(path, f"weights '{name}' stored as {array.dtype}, not float32")
    for name, array in {**weights, **others}.items():
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            raise _damaged(path, f"'{name}' holds values that are not finite (NaN or infinity)")
        if array.dtype.kind not in "fiuU":
            raise _damaged(path, f"'{name}' stored as {array.dtype}")


def _labels(path: Path, header: dict) -> list[str]:
    """The header's class names: a list of distinct, non-empty strings (a string would be read a character a class,
    a repeated name would predict two classes under one name)."""
    labels = header.get("labels")
    if not isinstance(labels, list) or not labels or not all(isinstance(label, str) and label for label in labels):
        raise _damaged(path, "its labels are not a list of class names")
    seen: set[str] = set()
    for label in labels:
        if label in seen:
            raise _damaged(path, f"the label {label!r} is there twice")
        seen.add(label)
    return labels


def load_model(path: str | Path):
    """-> Model (text) or ImageModel (header "kind": "cnn")."""
    path = Path(path)
    header, arrays = _open(path)
    labels = _labels(path, header)
    if header.get("kind") == "cnn":
        return _image_model(path, header, arrays, labels)
    try:
        vectorizer_arrays = {k.split(".", 1)[1]: v for k, v in arrays.items() if k.startswith("vectorizer.")}
        model = Model(
            vectorizer=Vectorizer.from_arrays(header["vectorizer"], vectorizer_arrays),
            params=Params(*(arrays[name] for name in Params._fields)),
            labels=labels,
            settings=Settings.from_dict(header["settings"]),
            metadata=header.get("metadata", {}),
            thresholds=arrays["thresholds"] if header["settings"].get("multi_label") else None,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ArtifactError(
            f"model file '{path}' is incomplete or damaged ({type(exc).__name__}: "
            f"{' '.join(str(exc).split())}): retrain it"
        ) from None
    _check_arrays(
        path,
        {name: arrays[name] for name in Params._fields},
        {k: v for k, v in arrays.items() if k not in Params._fields},
    )
    # w1 (F, H), b1 (H,), w2 (H, C), b2 (C,): any other shape would fail later, in NumPy, with a broadcast error.
    # The linear family's: w1 (F, C), b1 (C,), w2 (0, C), b2 (C,); a network with a linear model beside it: w1
    # (F, H + C), b1 (H + C,) (textclf/models/weights.py).
    w1, b1, w2, b2 = model.params
    family = model.settings.family
    direct = len(model.labels) if family in ("linear", "network+linear") else 0  # W1's columns scoring classes
    shapes_ok = (
        w1.ndim == 2
        and w2.ndim == 2
        and w1.shape[0] == model.vectorizer.n_features
        and b1.shape == (w1.shape[1],)
        and w2.shape[0] == w1.shape[1] - direct
        and (w2.shape[0] == 0) == (family == "linear")
        and w2.shape[1] == len(model.labels)
        and b2.shape == (len(model.labels),)
        and (model.thresholds is None or model.thresholds.shape == (len(model.labels),))
    )
    if not shapes_ok:
        raise ArtifactError(
            f"model file '{path}' is inconsistent (weight shapes w1 {w1.shape}, b1 {b1.shape}, "
            f"w2 {w2.shape}, b2 {b2.shape} do not fit together): retrain it"
        )
    return model


def _image_model(path: Path, header: dict, arrays: dict[str, np.ndarray], labels: list[str]):
    from textclf.inference.image_model import ImageModel

    try:
        settings = Settings.from_dict(header["settings"])
        params = ImageModel.params_from_arrays(arrays, len(settings.channels))
        model = ImageModel(params, labels, settings, tuple(header["image_shape"]), header.get("metadata", {}))
    except (KeyError, TypeError, ValueError) as exc:
        raise ArtifactError(
            f"model file '{path}' is incomplete or damaged ({type(exc).__name__}: "
            f"{' '.join(str(exc).split())}): retrain it"
        ) from None
    _check_arrays(path, arrays, {})
    if model.params.out_w.shape[1] != len(model.labels):
        raise ArtifactError(f"model file '{path}' is inconsistent (weight shapes do not match): retrain it")
    return model
