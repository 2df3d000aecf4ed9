"""One engine process per database, as the operator meets it: a second ``serve`` on the
database of a running one exits with status 2 after ``--db-lock-wait-s`` and one log line
naming the holder, and the running one goes on serving (docs/operations.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from .harness import run
from .test_process import Service


def test_a_second_engine_on_the_same_database_exits_2_naming_the_holder(tmp_path):
    db = tmp_path / "cards.sqlite3"
    first = Service(tmp_path, db, "first")
    try:
        env = {**os.environ, "CARDGAMES_DB": str(db), "CARDGAMES_PORT": "0", "CARDGAMES_METRICS_PORT": "0",
               "CARDGAMES_HOST": "127.0.0.1", "CARDGAMES_METRICS_HOST": "127.0.0.1",
               "CARDGAMES_LOG_FORMAT": "json", "CARDGAMES_DB_LOCK_WAIT_S": "0.5", "CARDGAMES_BOT_WORKERS": "1"}
        started = time.monotonic()
        second = subprocess.run([sys.executable, "-m", "engine_service", "serve"], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=60)
        took = time.monotonic() - started
        lines = [json.loads(raw) for raw in second.stdout.splitlines() + second.stderr.splitlines()
                 if raw.startswith("{")]
        refusal = [line for line in lines if line.get("event") == "db_in_use"]
        assert second.returncode == 2, second.stderr
        assert len(refusal) == 1 and refusal[0]["level"] == "error"
        assert f"pid {first.proc.pid} " in refusal[0]["error"] and refusal[0]["db"] == str(db)
        assert not any(line.get("event") == "serving" for line in lines)
        assert took >= 0.5

        async def health():
            async with grpc.aio.insecure_channel(first.target) as ch:
                return (await health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest())).status
        assert run(health)() == health_pb2.HealthCheckResponse.SERVING  # undisturbed
    finally:
        assert first.stop() == 0
