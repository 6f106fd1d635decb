"""The service's options: limits, the token rule and where the network runs; passed to worker processes as JSON."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from textclf.errors import SettingsError

OPTIONS_ENV = "TEXTCLF_SERVICE_OPTIONS"


@dataclass
class ServiceOptions:
    db_path: Path | None = None
    token: str | None = None
    require_token_everywhere: bool = False  # set when binding a non-loopback address
    data_root: Path | None = None  # job corpora must lie below it (None: no job submission over HTTP)
    max_body_bytes: int = 1_000_000
    max_instances: int = 1000
    max_batch: int = 512
    batch_window_ms: float = 0.0  # 0: take what is queued now (batches grow by themselves under load)
    timeout_s: float = 10.0
    reload_seconds: float = 1.0
    # "host": NumPy; "device": the network through JAX on its default device; "auto": device when JAX sees
    # a GPU. Vectorizing stays on the host either way. Host is the default because it measured faster for
    # this network on the H200 machine (8 workers, batched: 47,523 vs 21,637 docs/s; one document: p50 3.8 vs
    # 4.6 ms): a ~40-term document times a 128-wide layer is microseconds of NumPy, less than a GPU dispatch.
    score_on: str = "host"
    model_paths: list[str] = field(default_factory=list)  # model files and folders served beside the published

    def __post_init__(self) -> None:
        if self.score_on not in ("host", "device", "auto"):
            raise SettingsError(f"--score-on must be host, device or auto, not '{self.score_on}'")
        if not (self.reload_seconds > 0 and math.isfinite(self.reload_seconds)):
            raise SettingsError(f"--reload-seconds must be a positive number of seconds, not {self.reload_seconds}")

    @classmethod
    def binding(cls, host: str, token: str | None, **options) -> ServiceOptions:
        """The options for a service bound to `host`: beyond loopback every endpoint needs the token, and
        there is no such service without one (it would take jobs from anyone who can reach the port)."""
        public = not is_loopback(host)
        if public and not token:
            raise SettingsError(f"binding {host} exposes the service beyond this machine: set --token or TEXTCLF_TOKEN")
        return cls(token=token, require_token_everywhere=public, **options)


def options_to_env(options: ServiceOptions) -> str:
    return json.dumps({k: str(v) if isinstance(v, Path) else v for k, v in asdict(options).items()})


def is_loopback(host: str) -> bool:
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")


def options_from_env(raw_json: str) -> ServiceOptions:
    raw = json.loads(raw_json)
    for key in ("db_path", "data_root"):
        raw[key] = Path(raw[key]) if raw.get(key) else None
    return ServiceOptions(**raw)
