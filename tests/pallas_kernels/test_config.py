import json

from pallas_kernels import config as config_module
from pallas_kernels.config import KernelConfig, tuned


def test_tuned_picks_nearest_batch_and_caps_row_blocks(tmp_path, monkeypatch):
    table = {"configs": [
        {"device": "gpu:A", "batch_size": 32, "config": {"forward_split_k": 64, "grad_block_m": 32}},
        {"device": "gpu:A", "batch_size": 4096, "config": {"forward_split_k": 4, "forward_block_m": 128}},
    ]}
    path = tmp_path / "tuned.json"
    path.write_text(json.dumps(table))
    monkeypatch.setattr(config_module, "TUNED_FILE", path)
    assert tuned(3000, "gpu:A").forward_split_k == 4
    small = tuned(16, "gpu:A")
    assert small.forward_split_k == 64 and small.grad_block_m == 16 and small.forward_block_m == 16
    assert tuned(4096, "gpu:other").forward_block_m == 128  # falls back to any swept GPU
    monkeypatch.setattr(config_module, "TUNED_FILE", tmp_path / "missing.json")
    assert tuned(64, "gpu:A") == KernelConfig()


def test_shipped_table_is_valid():
    for entry in json.loads(config_module.TUNED_FILE.read_text())["configs"]:
        KernelConfig(**entry["config"])
