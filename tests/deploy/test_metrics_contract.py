"""The alert rules and the Grafana dashboard query only metrics and labels the engine exports
(engine_service/observability/metrics.py), and every dashboard query is valid PromQL."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from .promql import (alert_queries, dashboard_queries, exported_metrics, grouping_labels,
                     metric_names, selector_labels, TARGET_LABELS)

QUERIES = alert_queries() + dashboard_queries()
EXPORTED = exported_metrics()


def test_there_is_something_to_check():
    """Both files are found and hold queries (a moved file must not make the checks vacuous)."""
    wheres = {q.where.split()[0] for q in QUERIES}
    assert "alerts.yml" in wheres and "cardgames.json" in wheres
    assert len(QUERIES) >= 25


@pytest.mark.parametrize("query", QUERIES, ids=lambda q: q.where)
def test_every_metric_exists(query):
    """Each cardgames_* / process_* name in a query is a sample the engine exports."""
    names = metric_names(query.expr)
    assert names or "up{" in query.expr, f"{query.where}: no engine metric in {query.expr!r}"
    missing = sorted(n for n in names if n not in EXPORTED)
    assert not missing, f"{query.where}: not exported by the engine: {missing}"


@pytest.mark.parametrize("query", QUERIES, ids=lambda q: q.where)
def test_every_label_exists(query):
    """Label matchers and by()/without() groupings name labels the metrics really carry."""
    used = [EXPORTED[n] for n in metric_names(query.expr) if n in EXPORTED]
    for metric, labels in selector_labels(query.expr):
        if metric not in EXPORTED:
            continue
        exported = EXPORTED[metric]
        allowed = exported.labels | TARGET_LABELS | ({"le"} if metric.endswith("_bucket") else set())
        assert labels <= allowed, f"{query.where}: {metric} has no label(s) {sorted(labels - allowed)}"
    allowed = set(TARGET_LABELS).union(*(m.labels for m in used))
    if any(m.type == "histogram" for m in used):
        allowed.add("le")
    assert grouping_labels(query.expr) <= allowed, (
        f"{query.where}: grouping by unknown label(s) {sorted(grouping_labels(query.expr) - allowed)}")


@pytest.fixture(scope="module")
def promtool() -> str:
    path = shutil.which("promtool")
    assert path, "promtool is missing: install the Debian package 'prometheus' (make test installs it as root: tests/system_tools.sh)"
    return path


def test_dashboard_queries_are_valid_promql(promtool, tmp_path):
    """promtool parses every dashboard query (written as recording rules)."""
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:query_{i}", "expr": q.expr}
        for i, q in enumerate(dashboard_queries())]}]}
    path = tmp_path / "dashboard_rules.yml"
    path.write_text(yaml.safe_dump(rules))
    result = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mean_gc_pause_panel_spans_no_restart(promtool, tmp_path):
    """The dashboard's mean full-collection pause, across a restart under the same instance:
    each process starts with the same full collections, so the count read 2 again (no reset
    Prometheus could see) while the sum moved, and the panel drew +Inf (its legend's max
    with it) until a collection came; then a mean over two processes' counters. As the alert
    (CardgamesLongGcPauses), it draws nothing while the window holds a restart, and the
    true mean once it does not."""
    (query,) = [q for q in dashboard_queries() if "increase(cardgames_gc_pause_seconds_count" in q.expr]
    expr = f"round({query.expr}, 0.001)"  # 0.8, not 0.8000000000000005
    tests = {"rule_files": [], "evaluation_interval": "1m", "tests": [{
        "interval": "1m",
        "input_series": [
            {"series": 'process_start_time_seconds{job="cardgames-engine", instance="engine:9464"}',
             "values": "1000x4 1300x66"},
            {"series": 'cardgames_gc_pause_seconds_count{job="cardgames-engine", instance="engine:9464", generation="2"}',
             "values": "2x29 3+1x40"},
            {"series": 'cardgames_gc_pause_seconds_sum{job="cardgames-engine", instance="engine:9464", generation="2"}',
             "values": "0.044x4 0.056x24 0.856+0.8x40"},
        ],
        "promql_expr_test": [
            {"expr": expr, "eval_time": "25m", "exp_samples": []},
            {"expr": expr, "eval_time": "70m",
             "exp_samples": [{"labels": '{instance="engine:9464"}', "value": 0.8}]},
        ],
    }]}
    path = tmp_path / "gc_panel_test.yml"
    path.write_text(yaml.safe_dump(tests))
    result = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_unary_latency_panel_leaves_out_every_stream():
    """The "Unary RPC latency" panel leaves out every server stream the engine observes: a
    stream's duration is its whole life (rpc_duration_seconds), seconds to hours. It left out
    WatchMatch only, and a client watching the health service (grpc.health.v1.Health/Watch:
    grpc's client-side health checking) drew that method at the histogram's top bucket."""
    import re as regex

    from engine_service.transport.server import _descriptor_methods
    from grpc_health.v1 import health_pb2

    (query,) = [q for q in dashboard_queries() if "Unary RPC latency" in q.where]
    (left_out,) = regex.findall(r'method!~"([^"]+)"', query.expr)
    health = health_pb2.DESCRIPTOR.services_by_name["Health"]
    streams = {f"/{health.full_name}/{m.name}" for m in health.methods if m.server_streaming}
    streams |= {name for name, streaming in _descriptor_methods() if streaming}
    unary = {name for name, _ in _descriptor_methods()} - streams
    assert "/grpc.health.v1.Health/Watch" in streams and len(unary) > 10
    # PromQL regular expressions are anchored at both ends
    assert all(regex.fullmatch(left_out, name) for name in streams), (left_out, sorted(streams))
    assert not any(regex.fullmatch(left_out, name) for name in unary), left_out


def test_every_latency_alert_threshold_is_a_bucket_bound_of_its_histogram():
    """histogram_quantile interpolates inside a bucket: an alert's `> threshold` on a quantile
    is exact only where the threshold is one of the histogram's bucket bounds (with the
    bounds around it, "p99 above 250 ms" could fire at a p99 of 200 ms, or miss 300 ms)."""
    import re as regex

    from prometheus_client import Histogram

    from engine_service.observability.metrics import Metrics

    bounds = {h._name: h._upper_bounds for h in vars(Metrics()).values() if isinstance(h, Histogram)}
    checked = []
    for query in alert_queries():
        for family, threshold in regex.findall(
                r"histogram_quantile\([^,]+,\s*sum by \([^)]*\)\s*\(rate\((cardgames_[a-z_]+)_bucket\[\w+\]\)\)\s*\)"
                r"\s*>\s*([0-9.]+)", query.expr):
            assert float(threshold) in bounds[family], (query.where, threshold, bounds[family])
            checked.append(family)
    assert sorted(checked) == ["cardgames_action_latency_seconds", "cardgames_store_write_seconds"], checked
