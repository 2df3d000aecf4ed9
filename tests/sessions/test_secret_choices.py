"""Secret choices: with optional meld declaration (Klaberjass KL-A20, Jo-Jotte JJ-A21) both
``declare`` and ``conceal`` are always offered "so that the step reveals nothing". A player who
sends ``declare`` with nothing to declare (or nothing that changes the dialogue) must not be
told apart from one who conceals: not by the action of the events every audience gets (live
and replayed), nor by the view's ``table.deal_actions``, nor by the log. The session used to
publish, store and log the string the player sent (``declare``) while Jo-Jotte's own record
said ``conceal``; Klaberjass's record kept ``declare`` too."""

from __future__ import annotations

import random

import pytest
from structlog.testing import capture_logs

from engine_service.rules.games.jojotte import melds as JM
from engine_service.rules.games.klaberjass.sequences import ranked
from engine_service.sessions.api import Principal

from .helpers import collect, config, manager, open_match, run

OPTION = {"klaberjass": "kl_meld_declaration", "jojotte": "jj_meld_declaration"}


def holds_meld(game_id: str, state, seat: int) -> bool:
    """Whether ``seat`` holds a meld of the category its meld step is about (omniscient)."""
    if game_id == "klaberjass":
        return bool(ranked(state._hands[seat], state._trump))
    cat = state._meld_step >> 1
    if cat == 0:
        order = JM.quartet_order(state._pstrain, state.cfg.nt_quartet_natural)
        return bool(JM.hand_quartets(state._h[seat], order))
    return bool(JM.hand_sequences(state._h[seat], state._pstrain, state.cfg.split_runs))


async def play_declaring(mgr, game_id: str, seed: int, max_actions: int):
    """Every seat always sends ``declare`` at a meld step, else a random legal action."""
    rng = random.Random(seed)
    match_id, ps = await open_match(mgr, game_id, options={OPTION[game_id]: "optional"})
    sent: dict[int, str] = {}  # seq -> the string sent, for the meld steps
    for _ in range(max_actions):
        m = mgr._matches[match_id]
        if m.over:
            break
        seat = m.state.to_act()
        env = await mgr.get_view(match_id, ps[seat])
        legal = env.view["legal"]
        action = "declare" if "declare" in legal else rng.choice(legal)
        result = await mgr.submit_action(match_id, ps[seat], action, env.seq, f"{seat}-{env.seq}")
        if action == "declare":
            sent[result.seq] = action
            # a retry with the same id is the same action, whatever form the log keeps
            again = await mgr.submit_action(match_id, ps[seat], action, None, f"{seat}-{env.seq}")
            assert again.duplicate and again.seq == result.seq and again.action == result.action
    return match_id, sent


@pytest.mark.parametrize("game_id", ["klaberjass", "jojotte"])
def test_a_declare_that_states_nothing_is_not_told_from_a_conceal(game_id):
    async def go():
        with capture_logs() as logs:
            async with manager(config(snapshot_threshold=100_000)) as mgr:
                checked = normalized = 0
                for seed in range(4):
                    match_id, sent = await play_declaring(mgr, game_id, seed, 400)
                    m = mgr._matches[match_id]
                    spectator = Principal("spectator", match_id)
                    events = await collect(mgr.watch(match_id, spectator, 0),
                                           until=lambda e: e.kind == "match_ended" or e.seq >= m.seq)
                    for e in events:
                        if e.kind != "action" or e.seq not in sent:
                            continue
                        before, _ = m.fold(e.seq - 1)
                        # the event says what the public record says
                        assert e.action == e.view.view["table"]["deal_actions"][-1]["action"]
                        assert e.action in ("declare", "conceal")
                        if e.action == "declare":
                            assert holds_meld(game_id, before, e.seat), (
                                f"seq {e.seq}: a declare with nothing to declare was published")
                        else:
                            normalized += 1
                        checked += 1
                    for entry in logs:
                        if entry.get("event") == "action_applied" and entry.get("seq") in sent \
                                and entry.get("match_id") == match_id:
                            ev = next(e for e in events if e.kind == "action" and e.seq == entry["seq"])
                            assert entry["action"] == ev.action
                assert checked > 4 and normalized > 0
    run(go(), timeout=300)
