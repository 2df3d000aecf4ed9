"""Where the shared rulebooks, vectors and transcripts live.

They are read at test time from ``../shared`` beside the project (or ``$CARDGAMES_SHARED``, or
``/work/shared``). A missing folder is a loud failure, never a skip.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    candidates = []
    if os.environ.get("CARDGAMES_SHARED"):
        candidates.append(Path(os.environ["CARDGAMES_SHARED"]))
    candidates += [ROOT.parent / "shared", Path("/work/shared")]
    for c in candidates:
        if (c / "rules").is_dir():
            return c
    raise FileNotFoundError(
        "the shared rules folder was not found (looked in: "
        + ", ".join(str(c) for c in candidates)
        + "); set CARDGAMES_SHARED to the folder that holds rules/vectors and rules/transcripts"
    )


def vectors(game: str) -> list[tuple[str, dict]]:
    """All vector files of a game as (file name, parsed JSON); fails if there are none."""
    files = sorted((shared_dir() / "rules" / "vectors").glob(f"{game}_*.json"))
    if not files:
        raise FileNotFoundError(f"no vector files for {game} in {shared_dir() / 'rules' / 'vectors'}")
    return [(f.name, json.loads(f.read_text())) for f in files]


def options_table(rulebook: str) -> list[str]:
    """The lines of a rulebook's section 11, "Table options" (its options table), e.g. of
    ``klaberjass.md``."""
    text = (shared_dir() / "rules" / rulebook).read_text()
    return text.split("## 11. Table options")[1].split("## 12.")[0].splitlines()


def transcripts(game: str) -> list[Path]:
    files = sorted((shared_dir() / "rules" / "transcripts").glob(f"{game}_*.json"))
    if not files:
        raise FileNotFoundError(f"no sample transcripts for {game}")
    return files
