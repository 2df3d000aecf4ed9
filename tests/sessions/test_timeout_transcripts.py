"""A match where one seat leaves every decision to the turn timer exports a transcript of
ordinary actions (NOTATION.md section 2: a move made for a player by the auto-move policy is
recorded as the ordinary action it made; JJK-10.5) that checks out. Each such Japanese Joker
card is the lowest-ranked normal card (JJK-10.4); in Klaberjass and Jo-Jotte each such action
is the one NOTATION.md section 5's policy names: `pass` in the auction, `keep` /
`no_exchange` in the exchange windows, `pass` in the nullo window and the answer to it, and in
play the legal card of lowest trick rank (a trump above every plain card; ties by suit order S
H D C), never an announcement."""

from __future__ import annotations

import asyncio

import pytest

from engine_service.rules import transcript
from engine_service.sessions.api import StaleSequence

from .helpers import Stream, config, manager, open_match, run

#: Trick rank, lowest first (KL-5 / JJ-6 card orders; NOTATION.md section 5).
TRUMP_LOW_TO_HIGH = ["7", "8", "Q", "K", "T", "A", "9", "J"]
PLAIN_LOW_TO_HIGH = ["7", "8", "9", "J", "Q", "K", "T", "A"]
SUITS = "SHDC"


def policy_card(legal: list[str], trump: str | None) -> str:
    """NOTATION.md section 5: the legal card of lowest trick rank, ties by suit order."""
    plays = [a for a in legal if a.startswith("play:") and a.count(":") == 1]

    def rank(action: str) -> tuple[int, int, int]:
        card = action.split(":")[1]
        if card[1] == trump:
            return (1, TRUMP_LOW_TO_HIGH.index(card[0]), SUITS.index(card[1]))
        return (0, PLAIN_LOW_TO_HIGH.index(card[0]), SUITS.index(card[1]))

    return min(plays, key=rank)


def play_by_timer(game: str, actions: int) -> tuple[dict, int]:
    """Both seats taken and connected; seat 0 acts at once (it takes the turn-up or accepts
    when it may, so that deals are played, else its first legal action), seat 1 never acts:
    the timer plays each of its moves. Stops after ``actions`` actions or the match's end."""
    async def go():
        async with manager(config(time_scale=0.01, reconnect_grace_s=2400)) as mgr:
            match_id, principals = await open_match(mgr, game, turn_time_s=10)  # 0.1 s each
            streams = [Stream(mgr, match_id, p) for p in principals]
            try:
                while True:
                    summary = await mgr.get_match(match_id)
                    if summary.status != "active" or summary.seq >= actions:
                        break
                    env = await mgr.get_view(match_id, principals[0])
                    if env.view["to_act"] == 0 and env.view["legal"]:
                        legal = list(env.view["legal"])
                        action = next((a for a in ("take", "accept") if a in legal), legal[0])
                        try:
                            await mgr.submit_action(match_id, principals[0], action, env.seq, f"c{env.seq}")
                        except StaleSequence:
                            pass  # seat 0's 0.1 s ran out first on a loaded machine: its timer moved
                    else:
                        await asyncio.sleep(0.01)
                return await mgr.export_transcript(match_id), summary.seq
            finally:
                for s in streams:
                    await s.close()

    return run(go(), timeout=120)


@pytest.mark.parametrize("game", ["klaberjass", "jojotte", "japanese_joker"])
def test_auto_moves_are_ordinary_actions_that_check_out(game):
    data, seq = play_by_timer(game, 40)
    assert seq >= 40
    steps = [s for d in data["deals"] for s in d["steps"]]
    assert len(steps) == seq
    diff, _ = transcript.check(data)
    assert diff is None, str(diff)
    if game == "japanese_joker":
        # JJK-10.4: the legal normal card of lowest rank (A K Q J T 9 8 7 6), ties by S H D C
        plays = [s for s in steps if s["seat"] == 1 and any(a[5:6] != "X" for a in s["legal"]
                                                          if a.startswith("play:"))]
        for step in plays:
            normal = [a for a in step["legal"] if a.startswith("play:") and a[5] != "X"]
            assert step["action"] == min(normal, key=lambda a: ("6789TJQKA".index(a[5]), SUITS.index(a[6])))
        assert len(plays) >= 8
        return
    checked = 0
    for deal in data["deals"]:
        trump = None
        for step in (s for s in deal["steps"] if s["seat"] == 1):
            legal, action = step["legal"], step["action"]
            if action.startswith("play:"):
                if trump is None:
                    trump = (deal.get("result") or {}).get("trump") or \
                        ((deal.get("result") or {}).get("contract") or {}).get("strain")
                assert action.count(":") == 1, f"an announcement was auto-played: {action}"
                if trump is not None:
                    assert action == policy_card(legal, trump), (legal, action, trump)
                    checked += 1
            elif "pass" in legal:
                assert action == "pass", (legal, action)
            elif "keep" in legal:
                assert action == "keep", (legal, action)
            elif "no_exchange" in legal:
                assert action == "no_exchange", (legal, action)
    assert checked >= 8, "the timer played cards in a deal with a known trump"
