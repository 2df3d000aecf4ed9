"""The backup and restore procedure of docs/operations.md, executed as written: an online
backup taken while the engine serves is a consistent database readable by its owner only, and
an engine started on the restored file resumes the match at the sequence number it had at
backup time."""

from __future__ import annotations

import asyncio
import random
import re
import stat
import subprocess
import sys
from pathlib import Path

from clients import cardgames_client as cg
from clients.local_service import LocalService

DOC = (Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text()
ADMIN = "backup-test-admin"


def documented_backup_script() -> str:
    """The ``python3 -c '...'`` program of the doc's backup command."""
    section = DOC[DOC.index("## Backup and restore"):DOC.index("## Upgrades")]
    (script,) = re.findall(r"python3 -c '([^']+)'", section.split("```sh", 1)[1].split("```", 1)[0])
    return script


async def play(target: str, match_id: str | None, tokens: list[tuple[int, str]], actions: int, seed: int):
    async with cg.connect(target) as client:
        if match_id is None:
            match = await client.create_match("japanese_joker", seats=[None, None])
            match_id = match.match_id
            tokens = [(s.seat, s.token) for s in [await client.join(match_id) for _ in range(2)]]
        sessions = [client.seat_session(match_id, seat, token) for seat, token in tokens]
        rng = random.Random(seed)
        for _ in range(actions):
            view = await sessions[0].view()
            if view.over:
                break
            await sessions[view.to_act].act(lambda v: rng.choice(cg.legal_notations(v)))
        return match_id, tokens, (await sessions[0].view()).seq


def test_documented_backup_and_restore(tmp_path):
    db = tmp_path / "cardgames.sqlite3"
    backup = tmp_path / "backup.sqlite3"
    log = tmp_path / "engine.log"
    engine = LocalService(db=str(db), admin_token=ADMIN, log_path=log).start()
    try:
        match_id, tokens, seq_at_backup = asyncio.run(play(engine.target, None, [], 20, 1))
        assert seq_at_backup >= 20
        # Online backup, the documented command, while the engine is running, from a process
        # whose umask would leave the copy readable by everyone (kubectl exec: no shell to set
        # one): the copy holds every deck, so the program itself makes it owner-only.
        result = subprocess.run([sys.executable, "-c", documented_backup_script(), str(db), str(backup)],
                                capture_output=True, text=True, timeout=60, umask=0o022)
        assert result.returncode == 0, result.stderr
        assert stat.S_IMODE(backup.stat().st_mode) == 0o600
        _, _, seq_after = asyncio.run(play(engine.target, match_id, tokens, 10, 2))
        assert seq_after > seq_at_backup
    finally:
        assert engine.stop() == 0

    # Restore: replace the file, delete the WAL companions, start the engine.
    backup.replace(db)
    for suffix in ("-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    restored = LocalService(db=str(db), admin_token=ADMIN, log_path=log).start()
    try:
        async def check():
            async with cg.connect(restored.target) as client:
                summary = await client.get_match(match_id)
                assert summary.seq == seq_at_backup, "the restored match is not at its backup-time seq"
                seat = client.seat_session(match_id, *tokens[0])
                view = await seat.view()  # the seat tokens of the backup still work
                assert view.seq == seq_at_backup

        asyncio.run(check())
        _, _, seq_end = asyncio.run(play(restored.target, match_id, tokens, 5000, 3))
        assert seq_end > seq_at_backup
    finally:
        assert restored.stop() == 0
