"""The PyTorch peer for Fashion-MNIST training throughput: textclf's default network in PyTorch on the GPU.

    python -m benchmarks.cnn.torch_cnn [/usr/share/datasets/fashion-mnist] [--epochs 5] [--compile]

Same network and training as textclf/models/cnn.py with --dropout 0 --augment none (conv 5x5 same 32 -> ReLU ->
pool 2, conv 5x5 64 -> ReLU -> pool 2, dense 128 ReLU, dense 10; Adam lr 1e-3, a fresh random order each
epoch) except the batch: 128 by default (--batch-size; textclf's default is 64, BENCHMARKS.md says which ran), images
resident on the GPU as uint8 and scaled per batch, cuDNN autotuning on. Eager
mode, or torch.compile (--compile). images/s: median over epochs 2+, CUDA-synchronised wall time.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pipelines.images import read_image_corpus
from textclf.inference.text_model import encode_labels


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", nargs="?", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--compile", action="store_true")
    args = parser.parse_args()
    import torch  # after the arguments: --help answers where torch is not installed
    from torch import nn

    torch.backends.cudnn.benchmark = True
    train, test = read_image_corpus(args.folder, "train"), read_image_corpus(args.folder, "t10k")
    classes = sorted(set(train.labels))
    to_device = lambda images: torch.from_numpy(np.ascontiguousarray(images.transpose(0, 3, 1, 2))).cuda()
    x_train, x_test = to_device(train.images), to_device(test.images)
    y_train = torch.from_numpy(encode_labels(train.labels, classes).astype(np.int64)).cuda()
    y_test = torch.from_numpy(encode_labels(test.labels, classes).astype(np.int64)).cuda()
    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(7 * 7 * 64, 128),
        nn.ReLU(),
        nn.Linear(128, len(classes)),
    ).cuda()
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    def step(x, y):
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(net(x.float() / 255.0), y)
        loss.backward()
        optimizer.step()
        return loss

    if args.compile:
        step = torch.compile(step)
    n = len(y_train)
    print(
        f"device {torch.cuda.get_device_name()}, PyTorch {torch.__version__}, "
        f"{'torch.compile' if args.compile else 'eager'}, batch {args.batch_size}"
    )
    rates = []
    for epoch in range(1, args.epochs + 1):
        torch.cuda.synchronize()
        start = time.perf_counter()
        order = torch.randperm(n, device="cuda")
        for i in range(0, n, args.batch_size):
            rows = order[i : i + args.batch_size]
            step(x_train[rows], y_train[rows])
        torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        rates.append(n / seconds)
        with torch.no_grad():
            predicted = torch.cat(
                [net(x_test[i : i + 1000].float() / 255.0).argmax(1) for i in range(0, len(y_test), 1000)]
            )
        accuracy = (predicted == y_test).float().mean().item()
        print(f"epoch {epoch}: {seconds:.2f} s, {n / seconds:,.0f} images/s, test accuracy {accuracy:.4f}", flush=True)
    steady = sorted(rates[1:] or rates)
    print(f"training images/s (epochs 2+, median) {steady[len(steady) // 2]:,.0f}")


if __name__ == "__main__":
    main()
