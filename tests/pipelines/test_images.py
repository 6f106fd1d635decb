import gzip

import numpy as np
import pytest
from PIL import Image

from pipelines.images import read_idx, read_image_corpus
from textclf.errors import CorpusError


def _idx(path, array: np.ndarray, gz: bool = True):
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(d.to_bytes(4, "big") for d in array.shape)
    data = header + array.astype(np.uint8).tobytes()
    with (gzip.open if gz else open)(path, "wb") as handle:
        handle.write(data)


def test_idx_folder_reads_fashion_mnist_layout(tmp_path):
    images = np.random.default_rng(0).integers(0, 255, (5, 28, 28))
    _idx(tmp_path / "train-images-idx3-ubyte.gz", images)
    _idx(tmp_path / "train-labels-idx1-ubyte", np.array([0, 9, 1, 0, 2]), gz=False)
    corpus = read_image_corpus(tmp_path)
    assert corpus.images.shape == (5, 28, 28, 1) and corpus.images.dtype == np.uint8
    assert (corpus.images[..., 0] == images).all()
    assert corpus.labels == ["T-shirt/top", "Ankle boot", "Trouser", "T-shirt/top", "Pullover"]
    assert corpus.format == "idx"


def test_idx_errors(tmp_path):
    (tmp_path / "bad").write_bytes(b"\x00\x00\x0d\x01\x00\x00\x00\x01x")
    with pytest.raises(CorpusError, match="not an IDX file of unsigned bytes"):
        read_idx(tmp_path / "bad")
    _idx(tmp_path / "short", np.zeros((3, 2, 2)))
    with gzip.open(tmp_path / "short") as handle:
        data = handle.read()
    (tmp_path / "short2").write_bytes(data[:-2])
    with pytest.raises(CorpusError, match="truncated"):
        read_idx(tmp_path / "short2")


def _png(path, size=(8, 8), value=0, mode="L"):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new(mode, size, value if mode == "L" else (value, 0, 0)).save(path)


def test_image_folder(tmp_path):
    for i in range(3):
        _png(tmp_path / "cats" / f"{i}.png", value=10 * i)
        _png(tmp_path / "dogs" / f"{i}.png", value=200)
    (tmp_path / "dogs" / ".hidden.png").write_bytes(b"junk")
    corpus = read_image_corpus(tmp_path)
    assert corpus.images.shape == (6, 8, 8, 1) and corpus.labels == ["cats"] * 3 + ["dogs"] * 3
    _png(tmp_path / "birds" / "red.png", mode="RGB")
    assert read_image_corpus(tmp_path).images.shape == (7, 8, 8, 3)  # one colour image: all RGB


def test_image_folder_errors(tmp_path):
    with pytest.raises(CorpusError, match="holds no images in label folders"):
        read_image_corpus(tmp_path)
    _png(tmp_path / "a" / "1.png")
    with pytest.raises(CorpusError, match="only one class"):
        read_image_corpus(tmp_path)
    _png(tmp_path / "b" / "1.png", size=(9, 8))
    with pytest.raises(CorpusError, match=r"differ in size: .* is 8x8, .* is 9x8: resize"):
        read_image_corpus(tmp_path)
    (tmp_path / "b" / "1.png").write_bytes(b"not a png")
    with pytest.raises(CorpusError, match="cannot read image .*1.png"):
        read_image_corpus(tmp_path)
