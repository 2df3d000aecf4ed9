"""docs/operations.md stays complete: every setting, metric and alert is documented, and it
names no setting or metric that does not exist."""

from __future__ import annotations

import re

from engine_service.settings import SETTINGS, Settings

from .promql import DEPLOY, exported_metrics

DOC = (DEPLOY.parent / "docs" / "operations.md").read_text()


def test_every_setting_is_documented_with_flag_and_variable():
    for s in SETTINGS:
        assert f"`{s.flag}`" in DOC and f"`{s.env}`" in DOC, s.name


def test_every_setting_row_shows_its_allowed_values():
    """The configuration table's `allowed` column is the code's range (settings.py), so the
    documentation cannot promise a value that the engine refuses, or the reverse."""
    rows = {row.split("|")[1].strip(): [c.strip() for c in row.split("|")[1:-1]]
            for row in DOC.splitlines() if row.startswith("| `--")}
    for s in SETTINGS:
        assert rows[f"`{s.flag}`"][3] == s.allowed, s.name


def test_every_setting_row_shows_the_default_in_force():
    """The `default` column is what the engine starts with when neither the flag nor the
    variable is given (settings.py's embedded defaults): an operator sizing a deployment
    from the table (message sizes, limits, timeouts) gets the value the engine uses. `unset`
    and `empty` are the column's words for no value, as in ``serve --help``."""
    defaults = Settings()
    rows = {row.split("|")[1].strip(): [c.strip() for c in row.split("|")[1:-1]]
            for row in DOC.splitlines() if row.startswith("| `--")}
    for s in SETTINGS:
        shown, default = rows[f"`{s.flag}`"][2], s.default(defaults)
        if shown == "unset":
            assert default is None, s.name
        elif shown == "empty":
            assert default in ("", ()), s.name
        else:
            assert shown.startswith("`") and shown.endswith("`"), (s.name, shown)
            assert s.parse(shown[1:-1]) == default, (s.name, shown, default)


def test_no_unknown_setting_is_documented():
    from engine_service.serve_cli import OTHER_PROJECT_VARIABLES  # the tests', bench's, Node client's

    known = ({s.env for s in SETTINGS} | {"CARDGAMES_DISABLE_PLUGIN_AUTOLOAD", "CARDGAMES_BOT_PLUGINS"}
             | OTHER_PROJECT_VARIABLES)
    documented = set(re.findall(r"CARDGAMES_[A-Z_]+", DOC))
    assert documented <= known, sorted(documented - known)


def test_every_metric_is_documented():
    families = {m.family + ("_total" if m.type == "counter" else "")
                for name, m in exported_metrics().items() if name.startswith("cardgames_")}
    missing = sorted(f for f in families if f"`{f}`" not in DOC)
    assert not missing, f"metrics missing from docs/operations.md: {missing}"


def test_no_unknown_metric_is_documented():
    exported = exported_metrics()
    known = set(exported) | {m.family for m in exported.values()}
    documented = set(re.findall(r"`(cardgames_[a-z_]+)`", DOC))
    assert documented <= known, sorted(documented - known)


def test_every_metric_row_gives_the_type_and_labels_the_engine_exports():
    """The metrics table's `type` and `labels` columns are the declared metric's
    (engine_service/observability/metrics.py), one row for every metric: an alert or a
    dashboard written from the table groups by labels the series carry. And, as the section
    says, a label is a bounded set, never a match id, a seat, a token or a player."""
    exported = exported_metrics()
    table = DOC[DOC.index("| metric | type | labels | meaning |"):].split("\n\n", 1)[0]
    rows = [[cell.strip() for cell in row.split("|")[1:-1]] for row in table.splitlines()[2:]]
    documented = set()
    for names, kind, labels, _ in rows:
        for name in re.findall(r"`(cardgames_[a-z_]+)`", names):
            metric = exported.get(name) or exported[name + "_count"]  # a histogram: its family
            documented.add(metric.family)
            assert kind == metric.type, (name, kind, metric.type)
            assert set(re.findall(r"`([a-z_]+)`", labels)) == metric.labels - {"le"}, (name, labels)
    families = {m.family for name, m in exported.items() if name.startswith("cardgames_")}
    assert documented == families, sorted(families ^ documented)
    for family in families:
        labels = next(m.labels for m in exported.values() if m.family == family)
        assert not labels & {"match_id", "match", "seat", "seat_token", "token", "player", "name"}, family


#: The closed label sets the metrics table names, value by value (a row's `meaning` column).
CLOSED_SETS = {
    ("cardgames_matches_active", "status"): {"waiting", "active"},
    ("cardgames_matches_finished_total", "outcome"): {"completed", "resigned", "forfeit", "abandoned",
                                                      "terminated"},
    ("cardgames_actions_total", "by"): {"player", "bot", "auto"},
    ("cardgames_actions_total", "result"): {"accepted", "duplicate", "stale"},
    ("cardgames_watchers", "audience"): {"seat", "spectator", "admin"},
    ("cardgames_presence_changes_total", "change"): {"joined", "connected", "disconnected", "bot_took_over",
                                                     "returned", "left"},
    ("cardgames_auto_moves_total", "reason"): {"timeout", "bot_failed", "takeover", "abandoned"},
    ("cardgames_grace_expired_total", "policy"): {"forfeit", "bot_takeover", "abandoned"},
    ("cardgames_bot_failures_total", "reason"): {"timeout", "exception", "illegal", "crash", "unknown_bot"},
    ("cardgames_bot_worker_restarts_total", "reason"): {"timeout", "crash"},
}


def test_the_closed_label_sets_at_0_are_the_values_the_metrics_table_names():
    """docs/operations.md, Metrics: "The series of the closed label sets exist at 0 from the
    start", for every installed game and bot "its outcomes, changes, reasons and policies
    (listed below)": each set the engine creates at 0 is the one its row lists. A value left
    out of its set (metrics.py's OUTCOMES, ACTORS, PRESENCE_CHANGES...) had no series until
    its first use, so the first ``terminated`` match or ``crash`` of a bot worker was no
    ``increase()``, and the test that checks the series at 0 iterates over the same tuples."""
    from engine_service.observability.metrics import Metrics

    metrics = Metrics()
    metrics.declare(games=["klaberjass"], bots=["random"])
    samples = [s for family in metrics.registry.collect() for s in family.samples]
    for (name, label), values in CLOSED_SETS.items():
        declared = {s.labels[label] for s in samples if s.name == name and s.value == 0}
        assert declared == values, (name, label, declared ^ values)
        (row,) = [r for r in DOC.splitlines() if r.startswith(f"| `{name}`")]
        meaning = row.split("|")[4]
        missing = sorted(v for v in values if not re.search(rf"\b{v}\b", meaning))
        assert not missing, (name, missing)


def test_the_standard_process_and_python_gc_metrics_the_section_names_are_exported():
    """"Plus the standard `process_*` (CPU, resident memory, open files), `python_gc_*` and
    `python_info` metrics": the open-files gauges feed an alert, the start time the
    long-GC-pauses one, the interpreter's version tells a dashboard which Python serves."""
    exported = exported_metrics()
    for name in ("process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds",
                 "process_max_fds", "process_start_time_seconds"):
        assert name in exported, name
    assert "`process_*`" in DOC and "`python_gc_*`" in DOC
    assert any(name.startswith("python_gc_") for name in exported), sorted(exported)
    assert "`python_info`" in DOC and "python_info" in exported, sorted(exported)


def _logged_events() -> dict[str, str]:
    """event name -> level, for every structlog call with a literal event in the engine."""
    events: dict[str, str] = {}
    for path in (DEPLOY.parent / "engine_service").rglob("*.py"):
        for level, name in re.findall(r'log\.(debug|info|warning|error|exception)\("([a-z_]+)"', path.read_text()):
            events.setdefault(name, level)
    return events


def test_documented_log_events_exist():
    section = DOC[DOC.index("## Logs"):DOC.index("## Metrics")]
    table = section.split("| event | level |", 1)[1].split("\n\n", 1)[0]
    first_column = [row.split("|")[1] for row in table.splitlines()[2:] if row.startswith("|")]
    documented = {name for cell in first_column for name in re.findall(r"`([a-z_]+)`", cell)}
    documented.discard("rpc")  # logged through a level chosen at run time
    known = set(_logged_events())
    assert documented, "the logs table is missing"
    assert documented <= known, f"documented events the engine never logs: {sorted(documented - known)}"


def test_every_logger_name_is_documented_and_no_other():
    """An operator filters the lines by ``logger`` (say, the ``rpc`` access lines apart from
    the match events): the Logs section names every logger the engine writes under, and none
    it does not."""
    section = DOC[DOC.index("## Logs"):DOC.index("| event | level |")]
    documented = set(re.findall(r"`((?:cardgames|engine_service)\.[a-z_.]+)`", section))
    used = set()
    for path in (DEPLOY.parent / "engine_service").rglob("*.py"):
        used.update(re.findall(r'structlog\.get_logger\("([a-z_.]+)"\)', path.read_text()))
    assert "cardgames.rpc" in used and "engine_service.sessions" in used
    assert documented == used, sorted(documented ^ used)


def test_every_error_and_warning_event_is_documented():
    """An on-call engineer looks up what a warning means too: ``log_conflict`` and
    ``bot_worker_lost`` were warnings that no document named."""
    levels = ("warning", "error", "exception")
    alarms = {name for name, level in _logged_events().items() if level in levels}
    missing = sorted(e for e in alarms if f"`{e}`" not in DOC)
    assert not missing, f"warning and error log events missing from docs/operations.md: {missing}"


def test_server_errors_runbook_names_every_unavailable_reason():
    """The CardgamesRpcServerErrors entry tells UNAVAILABLE's causes apart by the reason the
    engine gives (the `rpc` line's `reason`). It said UNAVAILABLE "alone means the engine is
    draining or overloaded", and a failing database (STORE_UNAVAILABLE, the likelier page)
    sent the operator looking for a shutdown."""
    engine = DEPLOY.parent / "engine_service"
    source = "\n".join(p.read_text() for p in engine.rglob("*.py"))
    # raise Unavailable("...", reason="X"), and the mapping table of transport/errors.py
    reasons = set(re.findall(r'Unavailable\((?:[^()]|\([^()]*\))*?reason="([A-Z_]+)"', source))
    reasons |= set(re.findall(r"\bUNAVAILABLE\s+([A-Z][A-Z_]+)\b", (engine / "transport" / "errors.py").read_text()))
    assert {"STORE_UNAVAILABLE", "DRAINING", "WATCH_OVERFLOW", "OUT_OF_FILE_DESCRIPTORS"} <= reasons, reasons
    (row,) = [r for r in DOC.splitlines() if r.startswith("| `CardgamesRpcServerErrors`")]
    missing = sorted(r for r in reasons if f"`{r}`" not in row)
    assert not missing, f"UNAVAILABLE reasons the runbook does not name: {missing}"


def test_upgrades_names_the_schema_version_of_this_release_and_what_each_one_added():
    """docs/operations.md, Upgrades: an operator decides from "This release is schema N"
    whether a rollout migrates the database (and needs the backup first); it must be the
    stores' version, and the list of what each schema added must reach it."""
    from engine_service.store import postgres, sqlite

    assert sqlite.SCHEMA_VERSION == postgres.SCHEMA_VERSION
    upgrades = DOC[DOC.index("## Upgrades"):]
    (said,) = re.findall(r"This release is schema (\d+)", upgrades)
    assert int(said) == sqlite.SCHEMA_VERSION
    missing = [v for v in range(2, sqlite.SCHEMA_VERSION + 1) if not re.search(rf"\bschema {v}\s+(?:added\s+)?`", upgrades)]
    assert not missing, f"schema versions whose changes Upgrades does not name: {missing}"


def test_every_histogram_row_gives_the_buckets_the_engine_exports():
    """The bucket table (docs/operations.md, after the metrics table) is each histogram's
    upper bounds as exported: an operator reading a quantile, or writing an alert on a
    ``le`` series (deploy/prometheus/alerts.yml does), relies on those bounds existing. One
    row for every histogram, none for another metric."""
    from prometheus_client import Histogram

    from engine_service.observability.gc_pauses import BUCKETS as GC_BUCKETS
    from engine_service.observability.gc_pauses import NAME as GC_NAME
    from engine_service.observability.metrics import Metrics

    metrics = Metrics(process_collectors=True)
    bounds = {v._name: tuple(v._upper_bounds[:-1]) for v in vars(metrics).values() if isinstance(v, Histogram)}
    gc_family = next(f for f in metrics.registry.collect() if f.name == GC_NAME)
    bounds[GC_NAME] = tuple(sorted(float(s.labels["le"]) for s in gc_family.samples
                                   if s.name.endswith("_bucket") and s.labels["le"] != "+Inf"
                                   and s.labels["generation"] == "0"))
    assert bounds[GC_NAME] == GC_BUCKETS
    table = DOC[DOC.index("| histogram | bucket upper bounds (s) |"):].split("\n\n", 1)[0]
    documented = {}
    for row in table.splitlines()[2:]:
        names, values = (cell.strip() for cell in row.split("|")[1:-1])
        for name in re.findall(r"`(cardgames_[a-z_]+)`", names):
            documented[name] = tuple(float(v) for v in values.split(", "))
    assert documented == bounds
    histograms = {m.family for m in exported_metrics().values() if m.type == "histogram"}
    assert set(documented) == {h for h in histograms if h.startswith("cardgames_")}
