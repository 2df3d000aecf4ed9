"""What the deploy manifests ask of the engine's metrics: the PromQL they contain, the metric
names and label names it uses, and the names and labels the engine really exports.

The exported side is read from :class:`engine_service.observability.metrics.Metrics` (the one
module that declares every metric), so a renamed metric or label breaks these tests instead of
a dashboard panel going silently empty.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
ALERTS = DEPLOY / "prometheus" / "alerts.yml"
DASHBOARDS = sorted((DEPLOY / "grafana" / "dashboards").glob("*.json"))

#: Grafana's template variables, replaced by values that make a dashboard query plain PromQL.
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h",
                     "$game": ".*", "$job": ".*"}

#: Labels every scraped series has, whatever the metric.
TARGET_LABELS = {"job", "instance"}

_SELECTOR = re.compile(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}")
_MATCHER = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*\"")
_OWN_METRIC = re.compile(r"\b((?:cardgames|process)_[a-zA-Z0-9_]+)\b")
_GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")


@dataclass(frozen=True)
class Query:
    """One PromQL expression and where it comes from (for failure messages)."""

    where: str
    expr: str


@dataclass(frozen=True)
class ExportedMetric:
    family: str
    type: str  # counter, gauge, histogram, summary, info...
    labels: frozenset[str]

    def sample_names(self) -> set[str]:
        suffixes = {"counter": ("_total", "_created"), "histogram": ("_bucket", "_count", "_sum", "_created"),
                    "summary": ("_count", "_sum", "_created"), "gauge": ("",), "info": ("_info",)}
        return {self.family + s for s in suffixes.get(self.type, ("",))}


def alert_queries() -> list[Query]:
    data = yaml.safe_load(ALERTS.read_text())
    return [Query(f"alerts.yml {rule['alert']}", rule["expr"])
            for group in data["groups"] for rule in group["rules"]]


def grafana_to_promql(expr: str) -> str:
    for var, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(var, value)
    return expr


def _dashboard_panels(panels: list[dict]) -> Iterator[dict]:
    for panel in panels:
        yield panel
        yield from _dashboard_panels(panel.get("panels", []))


def dashboard_queries() -> list[Query]:
    out = []
    for path in DASHBOARDS:
        dash = json.loads(path.read_text())
        for panel in _dashboard_panels(dash["panels"]):
            for target in panel.get("targets", []):
                out.append(Query(f"{path.name} panel {panel['title']!r}", grafana_to_promql(target["expr"])))
        for var in dash.get("templating", {}).get("list", []):
            if var.get("type") == "query":
                m = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", var["definition"])
                assert m, f"{path.name}: variable {var['name']} is not a label_values() query"
                out.append(Query(f"{path.name} variable {var['name']}", m.group(1)))
    return out


def exported_metrics() -> dict[str, ExportedMetric]:
    """Sample name -> metric, for every metric the engine's metrics module declares."""
    from prometheus_client.metrics import MetricWrapperBase

    from engine_service.observability.metrics import Metrics

    metrics = Metrics(process_collectors=True)
    found: dict[str, ExportedMetric] = {}
    declared = [v for v in vars(metrics).values() if isinstance(v, MetricWrapperBase)]
    for metric in declared:
        exported = ExportedMetric(metric._name, metric._type, frozenset(metric._labelnames))
        for name in exported.sample_names():
            found[name] = exported
    # Process and platform collectors: unlabelled families.
    for family in metrics.registry.collect():
        for sample in family.samples:
            found.setdefault(sample.name, ExportedMetric(family.name, family.type, frozenset(sample.labels)))
    return found


def metric_names(expr: str) -> set[str]:
    return set(_OWN_METRIC.findall(expr))


def selector_labels(expr: str) -> list[tuple[str, set[str]]]:
    """(metric, label names matched in its selector) for every ``metric{...}`` in ``expr``."""
    return [(m.group(1), {lm.group(1) for lm in _MATCHER.finditer(m.group(2))})
            for m in _SELECTOR.finditer(expr)]


def grouping_labels(expr: str) -> set[str]:
    return {label.strip() for m in _GROUPING.finditer(expr) for label in m.group(1).split(",") if label.strip()}
