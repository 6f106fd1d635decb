"""What a protocol alone costs a one-document request: a bare REST endpoint on uvicorn (what `textclf serve` runs on)
beside a bare Open Inference Protocol gRPC servicer (grpc.aio with uvloop, KServe's generated v2 stubs), each
answering a fixed label without a model, loaded by CLIENTS concurrent clients (aiohttp; tritonclient's gRPC client).
Prints a markdown table: server CPU a request and requests a second, each protocol ROUNDS times, alternating.

    python -m benchmarks.service.protocol_floor [--requests 6000] [--clients 4] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time

TEXT = "Oil prices rose on Tuesday as traders weighed supply worries against signs of slowing demand in Asia"


def rest_server(port: int) -> None:
    import uvicorn

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        body, more = b"", True
        while more:
            message = await receive()
            body, more = body + message.get("body", b""), message.get("more_body", False)
        texts = json.loads(body)["instances"]
        content = json.dumps({"predictions": [{"label": "World"} for _ in texts]}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(content)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": content})

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, proxy_headers=False)


def grpc_server(port: int) -> None:
    import grpc
    import uvloop
    from kserve.protocol.grpc import grpc_predict_v2_pb2 as pb
    from kserve.protocol.grpc import grpc_predict_v2_pb2_grpc as pb_grpc

    class Servicer(pb_grpc.GRPCInferenceServiceServicer):
        async def ModelInfer(self, request, context):
            texts = [text.decode() for text in request.inputs[0].contents.bytes_contents]
            answer = pb.ModelInferResponse(model_name=request.model_name, model_version="1")
            label = answer.outputs.add(name="label", datatype="BYTES", shape=[len(texts)])
            label.contents.bytes_contents.extend([b"World"] * len(texts))
            return answer

    async def serve():
        server = grpc.aio.server()
        pb_grpc.add_GRPCInferenceServiceServicer_to_server(Servicer(), server)
        server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        await server.wait_for_termination()

    uvloop.install()
    asyncio.run(serve())


def _cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _client(protocol: str, port: int):
    """-> (one request's coroutine function, its closer)."""
    if protocol == "grpc":
        import numpy as np
        import tritonclient.grpc.aio as triton

        client = triton.InferenceServerClient(f"127.0.0.1:{port}")

        async def one():
            text = triton.InferInput("text", [1], "BYTES")
            text.set_data_from_numpy(np.array([TEXT.encode()], dtype=object))
            await client.infer("floor", [text])

        return one, client.close
    import aiohttp

    session = aiohttp.ClientSession()

    async def one():
        async with session.post(f"http://127.0.0.1:{port}/v1/models/floor:predict", json={"instances": [TEXT]}) as r:
            await r.read()

    return one, session.close


async def _load(protocol: str, port: int, server_pid: int, requests: int, clients: int) -> tuple[float, float]:
    one, close = await _client(protocol, port)
    for _ in range(100):  # until the server answers
        try:
            await one()
            break
        except Exception:
            await asyncio.sleep(0.1)
    for _ in range(300):
        await one()
    gate = asyncio.Semaphore(clients)

    async def gated():
        async with gate:
            await one()

    cpu, began = _cpu_seconds(server_pid), time.perf_counter()
    await asyncio.gather(*(gated() for _ in range(requests)))
    cpu, wall = _cpu_seconds(server_pid) - cpu, time.perf_counter() - began
    await close()
    return 1e3 * cpu / requests, requests / wall


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(protocol: str, requests: int, clients: int) -> tuple[float, float]:
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.service.protocol_floor", "--serve", protocol, "--port", str(port)]
    )
    try:
        return asyncio.run(_load(protocol, port, server.pid, requests, clients))
    finally:
        server.terminate()
        server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=6000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--serve", choices=("rest", "grpc"), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        (rest_server if args.serve == "rest" else grpc_server)(args.port)
        return
    print(f"{args.clients} clients x one document, {args.requests} requests, {os.cpu_count()} cores\n")
    print("| protocol | round | server CPU ms/request | requests/s |\n|---|---:|---:|---:|")
    for round_number in range(1, args.rounds + 1):
        for protocol in ("rest", "grpc"):
            cpu, rate = measure(protocol, args.requests, args.clients)
            name = "REST (uvicorn)" if protocol == "rest" else "OIP gRPC (grpc.aio)"
            print(f"| {name} | {round_number} | {cpu:.3f} | {rate:,.0f} |")


if __name__ == "__main__":
    main()
