"""Load benchmark of `textclf serve`: starts the service as a subprocess on loopback and measures
predictions/s and latency for one client sending one short document at a time, many concurrent clients
(server-side micro-batching), and clients sending batches of documents.

    python -m benchmarks.service.service_load --db runs.db --model NAME --texts test.jsonl [--clients 50 --requests 200]
        [--workers N] [--publish-during CORPUS.jsonl]

Short documents: the first 200 characters of each text in --texts. Every request must succeed (the command
fails otherwise); p50/p99 are per request. The CPU columns are the server's processes' and the client
processes' CPU seconds per request: what each side costs, whichever of them limits the rate.
--publish-during publishes a new version of the model --publish-after seconds into the many-clients case (a copy
of the serving version's file, made before, published through the same database calls as the daemon's publish
step) and serves with `--reload-seconds 0.25`, so the service swaps versions in the middle of a run that lasts
about a second; the table counts the answers each version gave and says when its first came.

The clients use aiohttp (its C HTTP parser) on uvloop: an httpx client process on asyncio's loop saturated near
1,000 requests/s and ~1 ms of CPU a request, so eight of them measured the client rather than the service.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import aiohttp
import httpx
import psutil
import uvloop


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _client_loops(base, model, texts, clients, requests, per_request, first_client):
    latencies: list[float] = []
    errors = 0
    versions: Counter = Counter()  # answers per model version
    first_answer: dict[int, float] = {}  # version -> time.time() of its first answer
    url = f"{base}/v1/models/{model}:predict"

    async def one_client(offset: int) -> None:
        nonlocal errors
        # One connection per client, kept alive across its requests, as a client library would.
        async with aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=1), timeout=aiohttp.ClientTimeout(total=60)
        ) as session:
            for i in range(requests):
                start = (offset * requests + i) * per_request % max(1, len(texts) - per_request)
                body = json.dumps({"instances": texts[start : start + per_request]})
                began = time.perf_counter()
                async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as response:
                    answer = await response.read()
                latencies.append(time.perf_counter() - began)
                errors += response.status != 200
                if response.status == 200:
                    version = json.loads(answer)["version"]
                    versions[version] += 1
                    first_answer.setdefault(version, time.time())

    await asyncio.gather(*(one_client(first_client + c) for c in range(clients)))
    return latencies, errors, versions, first_answer


def _process(job):
    """One client process: waits for the common start time, then runs its share of the clients."""
    start_at, args = job
    time.sleep(max(0.0, start_at - time.time()))
    began, cpu = time.time(), time.process_time()
    latencies, errors, versions, first_answer = uvloop.run(_client_loops(*args))
    return latencies, errors, began, time.time(), time.process_time() - cpu, versions, first_answer


def _cpu_seconds(process: psutil.Process) -> float:
    """CPU seconds of a process and its live children (the server's worker processes)."""
    total = 0.0
    for p in [process, *process.children(recursive=True)]:
        try:
            times = p.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def _new_version(db_path: str, name: str):
    """A new version of model `name` made ready now (a copy of its newest version's file, as the daemon's
    training leaves its model file), and the function that publishes it with the daemon's own publish step
    (textclf.frontends.daemon.publish_file), returning the time it was done."""
    from db import models as published
    from db import open_db
    from textclf.frontends.daemon import publish_file

    db = open_db(db_path)
    serving = published.get_version(db, name)
    fields = {k: serving[k] for k in ("run_id", "eval_accuracy", "eval_kind", "labels") if k in serving}
    ready = Path(serving["path"]).with_name(".benchmark-copy.textclf.npz")
    shutil.copyfile(serving["path"], ready)

    def publish() -> float:
        publish_file(db, name, ready, **fields)
        return time.time()

    return publish


def _run(
    base,
    model,
    texts,
    clients,
    requests,
    per_request,
    processes,
    server: psutil.Process | None = None,
    at_start=None,
    delay_s: float = 0.0,
):
    """clients spread over `processes` client processes (one Python client process alone would measure the
    client instead of the service); at_start() runs in a thread delay_s after the clients begin and returns when
    it ended."""
    processes = max(1, min(processes, clients))
    shares = [clients // processes + (i < clients % processes) for i in range(processes)]
    firsts = [sum(shares[:i]) for i in range(processes)]
    start_at = time.time() + 1.0
    jobs = [
        (start_at, (base, model, texts, share, requests, per_request, first)) for share, first in zip(shares, firsts)
    ]
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        server_cpu = _cpu_seconds(server) if server else 0.0
        ended: list[float] = []
        timer = (
            threading.Timer(max(0.0, start_at + delay_s - time.time()), lambda: ended.append(at_start()))
            if at_start
            else None
        )
        if timer:
            timer.start()
        results = pool.map(_process, jobs)
        if timer:
            timer.join()
        server_cpu = _cpu_seconds(server) - server_cpu if server else 0.0
    latencies = sorted(x for r in results for x in r[0])
    errors = sum(r[1] for r in results)
    start = min(r[2] for r in results)
    wall = max(r[3] for r in results) - start
    count = max(1, len(latencies))
    return {
        "docs_per_s": clients * requests * per_request / wall,
        "requests": len(latencies),
        "errors": errors,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))],
        "server_cpu_ms": 1000 * server_cpu / count,
        "client_cpu_ms": 1000 * sum(r[4] for r in results) / count,
        "versions": sum((r[5] for r in results), Counter()),
        # seconds from the clients' start: the publish done, each version's first answer
        "published_s": ended[0] - start if at_start and ended else None,
        "first_answer_s": {
            v: min(r[6][v] for r in results if v in r[6]) - start for v in set().union(*(r[6] for r in results))
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--texts", required=True, help="JSONL with a text field")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--workers", type=int, default=1, help="textclf serve --workers")
    parser.add_argument(
        "--processes",
        type=int,
        default=max(1, min(8, (os.cpu_count() or 2) // 2)),
        help="client processes (default: half the cores, at most 8)",
    )
    parser.add_argument(
        "--publish-during", action="store_true", help="publish a new version of the model during the many-clients case"
    )
    parser.add_argument(
        "--publish-after",
        type=float,
        default=0.3,
        help="seconds into the many-clients case to publish (default 0.3: that case lasts ~1 s at 10,000 requests/s)",
    )
    args = parser.parse_args()
    texts = [json.loads(line)["text"][:200] for line in open(args.texts, encoding="utf-8")]
    port = _port()
    reload = ["--reload-seconds", "0.25"] if args.publish_during else []
    service = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "textclf",
            "serve",
            "--port",
            str(port),
            "--db",
            args.db,
            "--workers",
            str(args.workers),
            *reload,
        ],
        env=os.environ.copy(),
    )
    base = f"http://127.0.0.1:{port}"
    server = psutil.Process(service.pid)
    try:
        for _ in range(300):
            try:
                httpx.get(f"{base}/health/live", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        _run(base, args.model, texts, 4 * args.workers, 20, 1, 1)  # warm up: every worker loads the model
        cases = [
            ("1 client, 1 doc per request", 1, 500, 1),
            (f"{args.clients} clients x {args.requests} requests, 1 doc each", args.clients, args.requests, 1),
            ("8 clients, 256 docs per request", 8, 20, 256),
        ]
        print(
            "| case | requests | errors | docs/s | p50 ms | p99 ms | server CPU ms/request | client CPU ms/request "
            "| answers by version |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
        failed = 0
        for number, (name, clients, requests, per_request) in enumerate(cases):
            publish = _new_version(args.db, args.model) if args.publish_during and number == 1 else None
            r = _run(
                base,
                args.model,
                texts,
                clients,
                requests,
                per_request,
                args.processes,
                server,
                publish,
                args.publish_after,
            )
            failed += r["errors"]
            answers = ", ".join(
                f"v{v}: {n:,} (first at {r['first_answer_s'][v]:.2f} s)" for v, n in sorted(r["versions"].items())
            )
            if r["published_s"] is not None:
                answers += (
                    f"; published at {r['published_s']:.2f} s of {r['requests'] / r['docs_per_s'] * per_request:.2f} s"
                )
            print(
                f"| {name} | {r['requests']} | {r['errors']} | {r['docs_per_s']:,.0f} | {r['p50_ms']:.2f} | "
                f"{r['p99_ms']:.2f} | {r['server_cpu_ms']:.3f} | {r['client_cpu_ms']:.3f} | {answers} |",
                flush=True,
            )
    finally:
        service.terminate()
        service.wait(timeout=30)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
