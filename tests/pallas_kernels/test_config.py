import json

from pallas_kernels import config as config_module
from pallas_kernels.config import KernelConfig, tuned


def test_tuned_picks_nearest_batch_and_caps_row_blocks(tmp_path, monkeypatch):
    table = {
        "configs": [
            {"device": "gpu:A", "batch_size": 32, "config": {"forward": {"split_k": 64}, "grad": {"block_m": 32}}},
            {"device": "gpu:A", "batch_size": 4096, "config": {"forward": {"split_k": 4, "block_m": 128}}},
        ]
    }
    path = tmp_path / "tuned.json"
    path.write_text(json.dumps(table))
    monkeypatch.setattr(config_module, "TUNED_FILE", path)
    assert tuned(3000, "gpu:A").forward.split_k == 4
    small = tuned(16, "gpu:A")
    assert small.forward.split_k == 64 and small.grad.block_m == 16 and small.forward.block_m == 16
    assert small.forward.block_k == KernelConfig().forward.block_k  # fields not in the table keep the defaults
    assert tuned(4096, "gpu:other").forward.block_m == 128  # falls back to any swept GPU
    monkeypatch.setattr(config_module, "TUNED_FILE", tmp_path / "missing.json")
    assert tuned(64, "gpu:A") == KernelConfig()


def test_shipped_table_is_valid():
    for entry in json.loads(config_module.TUNED_FILE.read_text())["configs"]:
        config = KernelConfig.from_dict(entry["config"])
        assert KernelConfig.from_dict(config.to_dict()) == config
