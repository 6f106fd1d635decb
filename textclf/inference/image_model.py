"""A trained image classifier (textclf/models/cnn.py) as the rest of the product sees it: weights as numpy arrays,
labels, settings, the input image shape; probabilities for uint8 images. Saved by textclf/inference/artifacts.py in the
same .npz format as the text model (header "kind": "cnn")."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from textclf.models.cnn import CNNParams, ConvLayer
from textclf.settings import Settings
from textclf.errors import InputError


@dataclass
class ImageModel:
    kind: ClassVar[str] = "image"
    params: CNNParams  # numpy arrays
    labels: list[str]
    settings: Settings
    image_shape: tuple[int, int, int]  # (H, W, C) the network was trained on
    metadata: dict = field(default_factory=dict)

    def predict_proba(self, images: np.ndarray) -> np.ndarray:
        """uint8 (N, H, W, C) -> (N, classes) probabilities (XLA on the default device)."""
        from textclf.models.cnn import scorer

        if tuple(images.shape[1:]) != tuple(self.image_shape):
            raise InputError(
                f"images are {images.shape[1:]} (H, W, C) but the model takes {self.image_shape}: "
                "resize them to the training images' size"
            )
        probabilities = scorer(probabilities=True)
        return np.concatenate(
            [np.asarray(probabilities(self.params, images[i : i + 1000])) for i in range(0, len(images), 1000)]
        )

    def to_arrays(self) -> dict[str, np.ndarray]:
        arrays = {}
        for i, layer in enumerate(self.params.convs):
            arrays[f"conv{i}.w"], arrays[f"conv{i}.b"] = np.asarray(layer.w), np.asarray(layer.b)
        for name in ("fc_w", "fc_b", "out_w", "out_b"):
            arrays[name] = np.asarray(getattr(self.params, name))
        return arrays

    @staticmethod
    def params_from_arrays(arrays: dict[str, np.ndarray], n_convs: int) -> CNNParams:
        convs = tuple(ConvLayer(arrays[f"conv{i}.w"], arrays[f"conv{i}.b"]) for i in range(n_convs))
        return CNNParams(convs, arrays["fc_w"], arrays["fc_b"], arrays["out_w"], arrays["out_b"])


def read_image_file(path: str, image_shape: tuple[int, int, int]) -> np.ndarray:
    """One image file -> uint8 (H, W, C) in the model's channel layout; refuses what it cannot use."""
    file = Path(path)
    if not file.is_file():
        raise InputError(f"input image '{path}' does not exist: pass an existing image file")
    return decode_image(file.read_bytes(), image_shape, f"input '{path}'")


def decode_image(data: bytes, image_shape: tuple[int, int, int], what: str) -> np.ndarray:
    """Encoded image bytes (PNG, JPEG, ...) -> uint8 (H, W, C) in the model's channel layout. Pillow decodes
    image formats only (no pickles); `what` names the input in errors."""
    import io

    from PIL import Image, UnidentifiedImageError

    height, width, channels = image_shape
    try:
        with Image.open(io.BytesIO(data)) as image:
            # The size is in the header: checked before decoding, so a small file that would decode to a
            # huge picture is refused without being decoded.
            if image.size != (width, height):
                raise InputError(
                    f"{what} is {image.size[0]}x{image.size[1]} but the model takes {width}x{height}: resize it first"
                )
            picture = image.convert("L" if channels == 1 else "RGB")
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        raise InputError(f"{what} is not an image Pillow can read: pass a PNG or JPEG") from None
    array = np.asarray(picture, np.uint8)
    return array[..., None] if array.ndim == 2 else array


def decode_base64_image(text: str, image_shape: tuple[int, int, int], what: str) -> np.ndarray:
    """A base64 string of an image file (how the HTTP service takes images) -> uint8 (H, W, C)."""
    import base64
    import binascii

    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise InputError(f"{what} is not base64: send each image file's bytes base64-encoded") from None
    return decode_image(data, image_shape, what)
