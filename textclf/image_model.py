"""A trained image classifier (textclf/cnn.py) as the rest of the product sees it: weights as numpy arrays,
labels, settings, the input image shape; probabilities for uint8 images. Saved by textclf/artifacts.py in the
same .npz format as the text model (header "kind": "cnn")."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from textclf.cnn import CNNParams, ConvLayer
from textclf.config import Settings
from textclf.errors import InputError


@dataclass
class ImageModel:
    params: CNNParams  # numpy arrays
    labels: list[str]
    settings: Settings
    image_shape: tuple[int, int, int]  # (H, W, C) the network was trained on
    metadata: dict = field(default_factory=dict)

    def predict_proba(self, images: np.ndarray) -> np.ndarray:
        """uint8 (N, H, W, C) -> (N, classes) probabilities (XLA on the default device)."""
        from textclf.cnn import scorer

        if tuple(images.shape[1:]) != tuple(self.image_shape):
            raise InputError(f"images are {images.shape[1:]} (H, W, C) but the model takes {self.image_shape}: "
                             "resize them to the training images' size")
        probabilities = scorer(probabilities=True)
        return np.concatenate([np.asarray(probabilities(self.params, images[i:i + 1000]))
                               for i in range(0, len(images), 1000)])

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
    from PIL import Image, UnidentifiedImageError

    file = Path(path)
    if not file.is_file():
        raise InputError(f"input image '{path}' does not exist: pass an existing image file")
    try:
        with Image.open(file) as image:
            picture = image.convert("L" if image_shape[2] == 1 else "RGB")
    except (UnidentifiedImageError, OSError):
        raise InputError(f"input '{path}' is not an image Pillow can read: pass a PNG or JPEG") from None
    array = np.asarray(picture, np.uint8)
    array = array[..., None] if array.ndim == 2 else array
    if array.shape != tuple(image_shape):
        raise InputError(f"image '{path}' is {array.shape[1]}x{array.shape[0]} but the model takes "
                         f"{image_shape[1]}x{image_shape[0]}: resize it first")
    return array
