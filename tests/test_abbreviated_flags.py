"""The benchmarks (bench/*.py) and ``make proto``'s generator take their flags spelt out, as
the engine's commands, the clients and the arena do (engine_service/command_line.py):
argparse took any unambiguous prefix for the flag it began (``--matc`` for ``--matches``), so
a script's prefix came to mean another flag, or failed, once a flag with the same start was
added, and the refusal echoed the value that followed (``invalid int value: 'VALUE'``). An
abbreviation is an unrecognized argument: a usage error (exit status 2) naming it, its value
not shown."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Each command line, and a prefix of one of its flags that takes a number: without
#: ``allow_abbrev=False`` the prefix is that flag, and "secret" its refused value.
ABBREVIATED = {
    "bench.absence_heartbeat": "--sea",  # --seats
    "bench.action_path": "--matc",  # --matches
    "bench.encoding_digest": "--matc",
    "bench.gj_bid_inference": "--cal",  # --calibrate
    "bench.pg_append": "--matc",
    "bench.prune_batches": "--matc",
    "bench.restart_resume": "--matc",  # --matches
    "bench.rules_playouts": "--sec",  # --seconds
    "bench.search_playouts": "--per",  # --per-position
    "bench.service_load": "--cli",  # --clients
    "bench.soak": "--min",  # --minutes
}


def test_every_benchmark_is_checked():
    assert sorted(ABBREVIATED) == sorted(f"bench.{p.stem}" for p in (ROOT / "bench").glob("*.py"))


@pytest.mark.parametrize("module, prefix", sorted(ABBREVIATED.items()))
def test_a_benchmark_refuses_an_abbreviated_flag_without_its_value(module, prefix, capsys):
    main = importlib.import_module(module).main
    for argv in ([prefix, "secret"], [f"{prefix}=secret"]):
        with pytest.raises(SystemExit) as refused:
            main(argv)
        err = capsys.readouterr().err
        assert refused.value.code == 2, (module, argv, err)
        assert f"error: unrecognized arguments: {prefix} (1 value not shown: it may hold a secret)" in err, err
        assert "secret'" not in err and "=secret" not in err


def test_the_code_generator_refuses_an_abbreviated_flag(tmp_path, capsys):
    """``--ou DIR`` wrote the generated package into DIR as ``--out DIR``."""
    from engine_service.transport import codegen

    with pytest.raises(SystemExit) as refused:
        codegen.main(["--ou", str(tmp_path / "out")])
    assert refused.value.code == 2
    assert "error: unrecognized arguments: --ou (1 value not shown: it may hold a secret)" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
