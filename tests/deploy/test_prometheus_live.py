"""The real Prometheus binary against a real engine: it scrapes the engine's metrics, the
alert rules evaluate without errors, every dashboard query runs, and CardgamesEngineDown goes
pending when the engine dies."""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from clients import cardgames_client as cg
from clients.local_service import LocalService, free_port

from .promql import ALERTS, DEPLOY, dashboard_queries


def api(base: str, path: str, **params: str) -> dict:
    url = f"{base}{path}" + ("?" + urllib.parse.urlencode(params) if params else "")
    with urllib.request.urlopen(url, timeout=30) as reply:
        body = json.loads(reply.read())
    assert body["status"] == "success", body
    return body["data"]


def wait_for(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except (OSError, ValueError) as exc:  # Prometheus still starting
            last = exc
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def query_value(base: str, expr: str) -> float | None:
    result = api(base, "/api/v1/query", query=expr)["result"]
    return float(result[0]["value"][1]) if result else None


async def play_a_match(target: str) -> None:
    """Bots against a client seat, so that actions, RPCs, bot decisions and store writes happen."""
    async with cg.connect(target) as client:
        match = await client.create_match("japanese_joker", seats=[None, "random"], options={"target_score": 11})
        me = await client.join(match.match_id)
        rng = random.Random(2)
        while True:
            view = await me.view()
            if view.over:
                return
            if cg.is_my_turn(view):
                await me.act(lambda v: rng.choice(cg.legal_notations(v)), view)
            else:
                await asyncio.sleep(0.01)


@pytest.fixture
def prometheus_binary() -> str:
    path = shutil.which("prometheus")
    assert path, "the prometheus binary is missing: install the Debian package 'prometheus' (make test installs it as root: tests/system_tools.sh)"
    return path


def test_prometheus_scrapes_the_engine_and_evaluates_the_rules(prometheus_binary, tmp_path):
    engine = LocalService(log_path=tmp_path / "engine.log").start()
    prometheus = None
    try:
        asyncio.run(asyncio.wait_for(play_a_match(engine.target), 120))

        config = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
        config["global"]["scrape_interval"] = "1s"
        config["global"]["evaluation_interval"] = "1s"
        config["rule_files"] = [str(ALERTS)]
        prom_port = free_port()
        for job in config["scrape_configs"]:
            if job["job_name"] == "cardgames-engine":
                job["static_configs"] = [{"targets": [f"127.0.0.1:{engine.metrics_port}"]}]
            else:
                job["static_configs"] = [{"targets": [f"127.0.0.1:{prom_port}"]}]
        config_path = tmp_path / "prometheus.yml"
        config_path.write_text(yaml.safe_dump(config))
        prometheus = subprocess.Popen(
            [prometheus_binary, f"--config.file={config_path}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=open(tmp_path / "prometheus.log", "wb"))
        base = f"http://127.0.0.1:{prom_port}"

        wait_for(lambda: query_value(base, 'up{job="cardgames-engine"}') == 1.0, 60, "the engine target up")
        accepted = wait_for(lambda: query_value(
            base, 'sum(cardgames_actions_total{result="accepted", game="japanese_joker"})'), 30, "the action counter")
        assert accepted > 20
        assert query_value(base, 'sum(cardgames_matches_finished_total{game="japanese_joker", outcome="completed"})') == 1
        assert query_value(base, 'sum(cardgames_bot_decision_seconds_count{bot="random"})') > 0
        assert query_value(base, 'sum(cardgames_rpc_requests_total{code="OK"})') > 0
        assert query_value(base, "sum(cardgames_store_write_seconds_count)") > 0

        # Every alert rule is evaluated without error, and none fires on a healthy engine.
        def rules_evaluated():
            groups = api(base, "/api/v1/rules")["groups"]
            rules = [r for g in groups for r in g["rules"]]
            return rules if rules and all(r.get("lastEvaluation", "").startswith("20") and
                                          not r["lastEvaluation"].startswith("0001") for r in rules) else None

        rules = wait_for(rules_evaluated, 30, "the rules' first evaluation")
        expected = {r["alert"] for g in yaml.safe_load(ALERTS.read_text())["groups"] for r in g["rules"]}
        assert {r["name"] for r in rules} == expected
        assert all(r["health"] == "ok" for r in rules), [(r["name"], r.get("lastError")) for r in rules]
        # (absent(up) may be pending from an evaluation before the first scrape: it must clear)
        wait_for(lambda: api(base, "/api/v1/alerts")["alerts"] == [], 20, "no alert on a healthy engine")

        # Every dashboard query runs against the real series.
        for query in dashboard_queries():
            api(base, "/api/v1/query", query=query.expr)
        assert query_value(base, 'sum by (game) (cardgames_matches_created_total{game="japanese_joker"})') >= 1
        # the closed label sets are exported at 0 before their first increment (increase()
        # alerts see the first failure): every game, every store operation, every bot
        from engine_service.observability.metrics import BOT_FAILURE_REASONS, STORE_OPERATIONS
        from engine_service.rules import all_game_ids

        assert query_value(base, "count(cardgames_matches_created_total)") == len(all_game_ids())
        assert query_value(base, 'cardgames_store_errors_total{operation="append_action"}') == 0
        assert query_value(base, "count(cardgames_store_errors_total)") == len(STORE_OPERATIONS)
        assert query_value(base, 'cardgames_bot_failures_total{bot="heuristic", reason="crash"}') == 0
        assert query_value(base, 'count(cardgames_bot_failures_total{bot="random"})') == len(BOT_FAILURE_REASONS)

        # The engine dies: the down alert goes pending (it fires after its 1m "for").
        engine.kill()

        def engine_down_pending():
            alerts = api(base, "/api/v1/alerts")["alerts"]
            return [a for a in alerts if a["labels"]["alertname"] == "CardgamesEngineDown"]

        (alert,) = wait_for(engine_down_pending, 30, "CardgamesEngineDown pending")
        assert alert["state"] == "pending" and alert["labels"]["severity"] == "critical"
    finally:
        if prometheus is not None:
            prometheus.terminate()
            prometheus.wait(20)
        engine.stop()


def test_image_healthcheck_command_answers_against_a_real_engine(tmp_path):
    """The Dockerfile's HEALTHCHECK argv, run as is (python from this venv), exits 0 against a
    serving engine on the port in CARDGAMES_PORT and 1 when nothing listens there."""
    import os
    import sys

    from .test_manifests import healthcheck_command

    argv = healthcheck_command()
    argv[0] = sys.executable
    root = Path(__file__).resolve().parents[2]
    with LocalService(log_path=tmp_path / "engine.log") as engine:
        ok = subprocess.run(argv, env=dict(os.environ, CARDGAMES_PORT=str(engine.port)), cwd=root,
                            capture_output=True, text=True, timeout=30)
        assert ok.returncode == 0, ok.stderr
    down = subprocess.run(argv, env=dict(os.environ, CARDGAMES_PORT=str(free_port())), cwd=root,
                          capture_output=True, text=True, timeout=30)
    assert down.returncode == 1 and "UNAVAILABLE" in down.stderr
