"""deploy/prometheus: promtool accepts the configuration and the rules, and the alert rules'
own unit tests (alerts_test.yml: synthetic series -> exactly these alerts) pass."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import yaml

from .promql import DEPLOY

PROMETHEUS = DEPLOY / "prometheus"


@pytest.fixture(scope="module")
def promtool() -> str:
    path = shutil.which("promtool")
    assert path, "promtool is missing: install the Debian package 'prometheus' (make test installs it as root: tests/system_tools.sh)"
    return path


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, cwd=PROMETHEUS, timeout=60)


def test_check_config(promtool):
    """The compose stack's prometheus.yml (with its rule file) is valid."""
    result = run(promtool, "check", "config", "prometheus.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 rule files found" in result.stdout


def test_check_rules(promtool):
    result = run(promtool, "check", "rules", "alerts.yml")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("tests", ["alerts_test.yml", "first_failure_test.yml"])
def test_alert_unit_tests(promtool, tests):
    """Every alert fires on its synthetic failure, with its labels and text, and not before;
    first_failure_test.yml: the alerts on increase() see a first failure, on series exported
    at 0 from the start (as the engine does now) and on a series whose first sample already
    counts it."""
    result = run(promtool, "test", "rules", tests)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_alert_has_a_unit_test_and_a_runbook_entry():
    """Each alert is exercised by alerts_test.yml and explained in docs/operations.md."""
    alerts = {r["alert"] for g in yaml.safe_load((PROMETHEUS / "alerts.yml").read_text())["groups"]
              for r in g["rules"]}
    tests = yaml.safe_load((PROMETHEUS / "alerts_test.yml").read_text())["tests"]
    tested = {case["alertname"] for t in tests for case in t.get("alert_rule_test", [])
              if case.get("exp_alerts")}
    assert alerts <= tested, f"alerts never seen firing in alerts_test.yml: {sorted(alerts - tested)}"
    operations = (DEPLOY.parent / "docs" / "operations.md").read_text()
    undocumented = sorted(a for a in alerts if a not in operations)
    assert not undocumented, f"alerts missing from docs/operations.md: {undocumented}"


def test_every_alert_has_severity_and_text():
    for group in yaml.safe_load((PROMETHEUS / "alerts.yml").read_text())["groups"]:
        for rule in group["rules"]:
            assert rule["labels"]["severity"] in ("critical", "warning"), rule["alert"]
            assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]


def test_scrape_target_is_the_engines_metrics_port():
    """The compose scrape target is the engine's service name and default metrics port."""
    from engine_service.settings import Settings

    config = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text())
    job = next(j for j in config["scrape_configs"] if j["job_name"] == "cardgames-engine")
    assert job["static_configs"][0]["targets"] == [f"engine:{Settings().metrics_port}"]


def _alerted_job() -> str:
    """The job CardgamesEngineDown watches."""
    rules = yaml.safe_load((PROMETHEUS / "alerts.yml").read_text())["groups"][0]["rules"]
    expr = next(r["expr"] for r in rules if r["alert"] == "CardgamesEngineDown")
    (job,) = set(re.findall(r'up\{job="([^"]+)"\}', expr))
    return job


def test_the_kubernetes_scrape_job_is_the_one_the_alerts_watch(promtool, tmp_path):
    """CardgamesEngineDown watches up{job="cardgames-engine"}, while the Kubernetes manifests
    had only prometheus.io annotations, which a generic annotation job scrapes under its own
    job name: the alert saw the engine as absent while it was up. The shipped scrape job
    (kubernetes.yml) and ServiceMonitor give the series that job, select the engine's pods on
    their "metrics" port, and the pods carry no annotations that a second job would scrape."""
    from .test_manifests import K8S

    job = _alerted_job()
    config = yaml.safe_load((PROMETHEUS / "kubernetes.yml").read_text())
    (scrape,) = config["scrape_configs"]
    assert scrape["job_name"] == job and config["rule_files"] == ["alerts.yml"]
    keeps = {tuple(r["source_labels"]): r["regex"] for r in scrape["relabel_configs"] if r.get("action") == "keep"}
    deployment = yaml.safe_load((K8S / "deployment.yaml").read_text())
    template = deployment["spec"]["template"]
    (container,) = template["spec"]["containers"]
    assert keeps[("__meta_kubernetes_pod_label_app_kubernetes_io_name",)] == \
        template["metadata"]["labels"]["app.kubernetes.io/name"]
    assert keeps[("__meta_kubernetes_pod_container_port_name",)] in {p["name"] for p in container["ports"]}
    assert keeps[("__meta_kubernetes_pod_container_port_name",)] == "metrics"
    assert not template["metadata"].get("annotations")
    # the Prometheus Operator names the job after the Service the ServiceMonitor selects
    monitor = yaml.safe_load((K8S / "tools" / "servicemonitor.yaml").read_text())
    service = yaml.safe_load((K8S / "service.yaml").read_text())
    assert service["metadata"]["name"] == job
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"][0]["port"] in {p["name"] for p in service["spec"]["ports"]}
    # promtool as packaged here has no Kubernetes service discovery: check the rest of the
    # configuration (relabelling included) with the discovery swapped for a static target
    scrape["static_configs"] = [{"targets": ["engine:9464"]}]
    del scrape["kubernetes_sd_configs"]
    (tmp_path / "alerts.yml").write_text((PROMETHEUS / "alerts.yml").read_text())
    (tmp_path / "kubernetes.yml").write_text(yaml.safe_dump(config))
    result = subprocess.run([promtool, "check", "config", "kubernetes.yml"], capture_output=True, text=True,
                            cwd=tmp_path, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_prometheus_rule_holds_the_alerts_as_they_are():
    """deploy/k8s/tools/prometheusrule.yaml (for the Prometheus Operator) is what `make
    prometheusrule` prints from alerts.yml, and its rule groups are alerts.yml's, so a cluster
    with the operator is alerted as the compose stack is (the docs told such an operator to
    "load those rules as a PrometheusRule", and none was shipped)."""
    import runpy

    tools = DEPLOY / "k8s" / "tools"
    generator = runpy.run_path(str(tools / "prometheusrule.py"))
    alerts = (PROMETHEUS / "alerts.yml").read_text()
    committed = (tools / "prometheusrule.yaml").read_text()
    assert committed == generator["render"](alerts), "run `make prometheusrule` and commit the result"
    rule = yaml.safe_load(committed)
    assert (rule["apiVersion"], rule["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    assert rule["spec"] == yaml.safe_load(alerts)


def test_the_runbook_table_gives_each_alert_its_severity_and_duration():
    """docs/operations.md's alert table: an operator pages on its severity column and reads
    how long a condition must last in "fires when"; both must be alerts.yml's. The table had
    no check beyond naming each alert, so a rule whose severity or `for` changed kept a
    runbook row that said otherwise."""
    rules = {r["alert"]: r for g in yaml.safe_load((PROMETHEUS / "alerts.yml").read_text())["groups"]
             for r in g["rules"]}
    operations = (DEPLOY.parent / "docs" / "operations.md").read_text()
    rows = {m[1]: (m[2], m[3]) for m in
            re.finditer(r"^\| `(Cardgames\w+)` \| (\w+) \| ([^|]+) \|", operations, re.MULTILINE)}
    assert set(rows) == set(rules), f"the alert table's rows: {sorted(rows)}; alerts.yml: {sorted(rules)}"
    for name, rule in rules.items():
        severity, fires_when = rows[name]
        assert severity == rule["labels"]["severity"], (name, severity)
        minutes = [int(n) for n in re.findall(r"\bfor (\d+) minutes?\b", fires_when)]
        if "for" in rule:
            number, unit = re.fullmatch(r"(\d+)([mh])", rule["for"]).groups()
            assert int(number) * (60 if unit == "h" else 1) in minutes, (name, rule["for"], fires_when)
        else:
            assert not minutes, (name, "fires at once, but the table says", fires_when)
