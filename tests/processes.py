"""Linux process facts the tests read from ``/proc``."""

from __future__ import annotations

import os


def child_pids(pid: int) -> list[int]:
    """The live processes whose parent is ``pid`` (their ``/proc/N/stat`` says so), in pid order.
    A process that ends while it is being read is skipped."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return sorted(found)
