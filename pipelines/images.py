"""Image corpora -> arrays: Fashion-MNIST's IDX files and folders of labelled images.

- IDX (the MNIST family's format; Debian's `dataset-fashion-mnist` installs
  /usr/share/datasets/fashion-mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz): a folder holding
  `<split>-images-idx3-ubyte[.gz]` and `<split>-labels-idx1-ubyte[.gz]`; split "train" or "t10k". Labels are
  Fashion-MNIST's class names when there are 10 classes, else the digits.
- Folder: `images/<label>/*.png|jpg|jpeg|bmp|gif` read with Pillow, converted to grayscale ("L") when every
  image is grayscale, else RGB. All images must have one size (no silent resizing: the network's input size is
  fixed by the first layer); hidden files are skipped.
Result: uint8 (N, H, W, C) and string labels. Bad input raises CorpusError naming the file and the fix.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipelines.errors import CorpusError

FASHION_MNIST_CLASSES = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif")


@dataclass
class ImageCorpus:
    images: np.ndarray  # (N, H, W, C) uint8
    labels: list[str]
    source: str
    format: str  # "idx" or "folder"

    def __len__(self) -> int:
        return len(self.labels)


def read_idx(path: str | Path) -> np.ndarray:
    """One IDX file (optionally gzipped) -> its array (uint8 data only, as MNIST-style sets use)."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise CorpusError(f"cannot read IDX file '{path}' ({exc}): pass an uncorrupted MNIST-style file") from None
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 0x08:
        raise CorpusError(
            f"'{path}' is not an IDX file of unsigned bytes: pass an MNIST-style *-idx3-ubyte or *-idx1-ubyte file"
        )
    dims = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(dims))
    body = np.frombuffer(data, np.uint8, offset=4 + 4 * dims)
    if body.size != int(np.prod(shape)):
        raise CorpusError(
            f"IDX file '{path}' is truncated ({body.size} of {int(np.prod(shape))} bytes): download it again"
        )
    return body.reshape(shape)


def _idx_file(folder: Path, stem: str) -> Path | None:
    for name in (stem, stem + ".gz"):
        if (folder / name).exists():
            return folder / name
    return None


def is_idx_folder(path: str | Path, split: str = "train") -> bool:
    path = Path(path)
    return path.is_dir() and _idx_file(path, f"{split}-images-idx3-ubyte") is not None


def read_idx_corpus(folder: str | Path, split: str = "train") -> ImageCorpus:
    folder = Path(folder)
    images_file = _idx_file(folder, f"{split}-images-idx3-ubyte")
    labels_file = _idx_file(folder, f"{split}-labels-idx1-ubyte")
    if images_file is None or labels_file is None:
        raise CorpusError(
            f"'{folder}' has no {split}-images-idx3-ubyte[.gz] and {split}-labels-idx1-ubyte[.gz]: "
            "pass the Fashion-MNIST folder (apt-get install dataset-fashion-mnist: "
            "/usr/share/datasets/fashion-mnist)"
        )
    images, digits = read_idx(images_file), read_idx(labels_file)
    if images.ndim != 3 or digits.ndim != 1 or images.shape[0] != digits.shape[0]:
        raise CorpusError(
            f"'{images_file}' ({images.shape}) and '{labels_file}' ({digits.shape}) do not match: "
            "pass the images and labels of one split"
        )
    names = FASHION_MNIST_CLASSES if int(digits.max()) < len(FASHION_MNIST_CLASSES) else None
    labels = [names[d] if names else str(d) for d in digits.tolist()]
    corpus = ImageCorpus(images[..., None], labels, str(folder), "idx")
    _check_classes(corpus)
    return corpus


def read_image_folder(root: str | Path) -> ImageCorpus:
    from PIL import Image, UnidentifiedImageError

    root = Path(root)
    if not root.is_dir():
        raise CorpusError(f"image corpus '{root}' is not a folder: pass images/<label>/<file>.png or an IDX folder")
    files = [
        (label.name, f)
        for label in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
        for f in sorted(label.rglob("*"))
        if f.is_file() and not f.name.startswith(".") and f.suffix.lower() in IMAGE_SUFFIXES
    ]
    if not files:
        raise CorpusError(f"'{root}' holds no images in label folders: put them in {root}/<label>/<name>.png")
    pictures = []
    for _, path in files:
        try:
            with Image.open(path) as image:
                image.load()
                pictures.append(image.copy())
        except (UnidentifiedImageError, OSError) as exc:
            raise CorpusError(f"cannot read image '{path}' ({exc.__class__.__name__}): remove or replace it") from None
    first = pictures[0].size
    odd = next((i for i, p in enumerate(pictures) if p.size != first), None)
    if odd is not None:
        size = pictures[odd].size
        raise CorpusError(
            f"images differ in size: '{files[0][1]}' is {first[0]}x{first[1]}, '{files[odd][1]}' is "
            f"{size[0]}x{size[1]}: resize them to one size first"
        )
    gray = all(p.mode in ("L", "1", "I;16", "I") for p in pictures)
    mode = "L" if gray else "RGB"
    arrays = np.stack([np.asarray(p.convert(mode), np.uint8) for p in pictures])
    corpus = ImageCorpus(arrays[..., None] if gray else arrays, [label for label, _ in files], str(root), "folder")
    _check_classes(corpus)
    return corpus


def read_image_corpus(path: str | Path, split: str = "train") -> ImageCorpus:
    """An IDX folder (its `split`) or a folder of label folders."""
    return read_idx_corpus(path, split) if is_idx_folder(path, split) else read_image_folder(path)


def _check_classes(corpus: ImageCorpus) -> None:
    classes = sorted(set(corpus.labels))
    if len(classes) < 2:
        raise CorpusError(
            f"image corpus '{corpus.source}' has only one class ('{classes[0]}'): a classifier needs at least 2 labels"
        )
