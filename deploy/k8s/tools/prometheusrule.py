"""Print deploy/prometheus/alerts.yml as a PrometheusRule (the Prometheus Operator's kind), so
that a cluster with the operator loads the same alerts as the compose stack's Prometheus:

    python deploy/k8s/tools/prometheusrule.py > deploy/k8s/tools/prometheusrule.yaml

(``make prometheusrule``). The rule groups are copied as they are, comments included, under
``spec``; tests/deploy/test_prometheus_config.py fails when the committed file differs from
what this prints."""

from __future__ import annotations

import sys
from pathlib import Path

ALERTS = Path(__file__).resolve().parents[2] / "prometheus" / "alerts.yml"

HEADER = """\
# Generated from deploy/prometheus/alerts.yml by deploy/k8s/tools/prometheusrule.py
# (`make prometheusrule`); edit alerts.yml, not this file.
# For clusters with the Prometheus Operator, beside servicemonitor.yaml:
# `kubectl apply -f deploy/k8s/tools/prometheusrule.yaml`, with the labels your Prometheus
# selects rules by (often `release: ...`). The alerts select job="cardgames-engine", the job
# the operator names after the Service.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: cardgames-engine
  labels:
    app.kubernetes.io/name: cardgames-engine
spec:
"""


def render(alerts: str) -> str:
    """The PrometheusRule text of an alerts file: its lines from ``groups:`` on, indented under
    ``spec`` (the comments before it describe the file, not the rules)."""
    lines = alerts.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("groups:"))
    body = "\n".join(("  " + line) if line.strip() else "" for line in lines[start:])
    return HEADER + body + "\n"


if __name__ == "__main__":
    sys.stdout.write(render(ALERTS.read_text()))
