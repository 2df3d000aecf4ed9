"""Jo-Jotte arithmetic for the generic invariant tests (tests/rules/test_invariants.py).

``check_scores`` re-derives the match totals from the deal results and re-checks the game,
rubber and match bookkeeping of jojotte.md section 10 from them alone; ``OPTION_SETS`` plays
random matches under option sets that switch on every table option of section 11.
"""

from __future__ import annotations

from engine_service.rules.games.jojotte.options import Config

TARGET = 80


def _game_count(cfg: Config, results: list[dict]) -> tuple[list[int], list[int], list[tuple[int, int]], list[int]]:
    """Replay JJ-10.1 to JJ-10.3 over the deal results: games won, rubbers won, rubber totals,
    and the seat that won each rubber."""
    games = [0, 0]
    rubbers = [0, 0]
    rtotals: list[tuple[int, int]] = []
    rubber_winners: list[int] = []
    gpts = [0, 0]
    rgames = [0, 0]
    rsum = [0, 0]
    for r in results:
        if r["thrown_in"]:
            continue
        below, above = r["below"], r["above"]
        for s in (0, 1):
            gpts[s] += below[s]
            rsum[s] += below[s] + above[s]
        t = cfg.game_target
        w = None
        if gpts[0] >= t and gpts[1] < t:
            w = 0
        elif gpts[1] >= t and gpts[0] < t:
            w = 1
        elif gpts[0] >= t and gpts[1] >= t:
            x, y = (gpts if cfg.simult_higher else below)
            if x != y:
                w = 0 if x > y else 1
        if w is None:
            continue
        games[w] += 1
        rgames[w] += 1
        if cfg.partscore_reset:
            gpts = [0, 0]
        else:
            gpts[w] = 0
        if rgames[w] == 2:
            rubbers[w] += 1
            rtotals.append((rsum[0], rsum[1]))
            rubber_winners.append(w)
            # the rubber bonus (300, or 0 under two_consecutive) is in this deal's entries
            bonus_line = below if cfg.single_column else above
            assert bonus_line[w] >= 0 or cfg.nullo_negative
            gpts = [0, 0]
            rgames = [0, 0]
            rsum = [0, 0]
    return games, rubbers, rtotals, rubber_winners


def check_scores(state) -> None:
    cfg = state.cfg
    results = state.deal_results()
    res = state.result()
    totals = res["totals"]
    below = [sum(r["below"][s] for r in results if not r["thrown_in"]) for s in (0, 1)]
    above = [sum(r["above"][s] for r in results if not r["thrown_in"]) for s in (0, 1)]
    assert totals["below"] == below, (totals, below)
    assert totals["above"] == above, (totals, above)
    games, rubbers, rtotals, _ = _game_count(cfg, results)
    assert totals["games_won"] == games
    if cfg.single_column:
        assert all(r["above"] == [0, 0] for r in results if not r["thrown_in"])
    for r in results:
        if r["thrown_in"]:
            assert r == {"thrown_in": True}
            continue
        assert set(r) == {"thrown_in", "contract", "trick_points", "below", "above", "pot"}
        c = r["contract"]
        assert c["kind"] in ("normal", "slam", "nullo") and c["multiplier"] in (1, 2, 4)
        assert r["pot"] >= 0
        if c["kind"] == "nullo":
            assert r["trick_points"] == [0, 0]
            if not cfg.nullo_melds and not cfg.premium_below:
                # a nullo scores only premiums/penalties, above the line unless
                # jj_premium_line = below moves the nullo premium there (JJ-A28)
                assert r["below"] == [0, 0]
        else:
            # JJ-8.2: nine tricks, at most 20 a trick (max card) plus the last 10; sum: 35
            per_trick = 35 if cfg.trick_value == 1 else 20
            assert 10 <= sum(r["trick_points"]) <= 9 * per_trick + 10
    if res["over"]:
        assert sum(rubbers) == cfg.match_rubbers
        points = [sum(t[0] for t in rtotals), sum(t[1] for t in rtotals)]
        if cfg.winner_rubbers and rubbers[0] != rubbers[1]:
            expected = [0] if rubbers[0] > rubbers[1] else [1]
        elif points[0] != points[1]:
            expected = [0] if points[0] > points[1] else [1]
        else:
            expected = [0, 1]
        assert res["winners"] == expected, (res["winners"], expected, rubbers, points)
    else:
        assert res["winners"] == []


#: Every table option of jojotte.md section 11 away from its default at least once.
OPTION_SETS = [
    {"jj_draw_deals": "low", "jj_draw_tie": "suit_order", "jj_first_deal_packet": 1,
     "jj_second_deal_packet": 1, "jj_info_card": "next", "jj_throw_in_redealer": "other",
     "jj_round1_calls": "accept_pass", "jj_round2_turnup_suit": "forbidden",
     "jj_double_timing": "end_of_auction", "jj_seven_exchange": "trump_seven",
     "jj_exchange_window": "until_first_lead", "jj_slam_strain": "suit_or_no_trump",
     "jj_nullo_strain": "contract", "jj_multiplier_scope": "all", "jj_failed_slam": "none",
     "jj_first_lead": "non_dealer", "jj_must_head_plain": False, "jj_trick_value": "sum",
     "jj_nt_quartet_order": "natural", "jj_winner_sequences": "best_plus_one",
     "jj_card_in_two_melds": False, "jj_split_runs": True, "jj_meld_declaration": "optional",
     "jj_jojotte_announcement": "automatic", "jj_outcome_basis": "trick_points",
     "jj_undoubled_scoring": "each_scores_own", "jj_tie_rule": "void",
     "jj_pot_at_rubber_end": "carry", "jj_scoresheet": "single_column", "jj_premium_line": "below",
     "jj_nullo_penalty_negative": True, "jj_nullo_melds": True,
     "jj_rubber_bonus_condition": "two_consecutive", "jj_simultaneous_game": "deal_winner",
     "jj_partscore_reset": False, "jj_match_winner": "points", "jj_match_rubbers": 2,
     "jj_overcall_accepted_turnup": False, "jj_unbid_slam_in_nullo": True, "jj_game_target": 150},
    {"jj_first_deal_packet": 3, "jj_exchange_window": "until_first_lead",
     "jj_defender_win_award": "both_trick_points", "jj_trick_value": "winning_card",
     "jj_meld_declaration": "optional", "jj_match_rubbers": 3, "jj_game_target": 60},
    {"jj_defender_win_award": "own_trick_points", "jj_seven_exchange": "none",
     "jj_premium_line": "below", "jj_nullo_penalty_negative": True, "jj_pot_at_rubber_end": "carry"},
]


# ---- scenario helpers (readable card codes) -----------------------------------------------

from engine_service.rules import get_game  # noqa: E402
from engine_service.rules.cards import CODES, PACK32  # noqa: E402

GAME = get_game("jojotte")


def make_deck(nd=(), dl=(), turn=None, nd2=(), dl2=(), info=None, stock=(), options=None) -> list[str]:
    """A deck (top card first) that deals these cards under ``options``' dealing procedure
    (JJ-2.4 to JJ-2.8): ``nd`` / ``dl`` the first six of the non-dealer / dealer, ``turn`` the
    turn-up, ``nd2`` / ``dl2`` the second three, ``info`` the information card, ``stock`` the
    first stock cards; every other card fills the remaining places in pack order."""
    cfg = Config(GAME.options(options or {}))
    deck: list[str | None] = [None] * 32
    placed: list[str] = []

    def put(positions, cards):
        assert len(cards) <= len(positions), (positions, cards)
        for p, c in zip(positions, cards):
            deck[p] = c
            placed.append(c)

    put(cfg.first_nd, list(nd))
    put(cfg.first_dl, list(dl))
    if turn:
        put((12,), [turn])
    put(cfg.second_nd, list(nd2))
    put(cfg.second_dl, list(dl2))
    if info:
        put((cfg.info_pos,), [info])
    put(cfg.stock_positions, list(stock))
    assert len(set(placed)) == len(placed), "a card is placed twice"
    rest = iter(c for c in (CODES[i] for i in PACK32) if c not in placed)
    return [c if c is not None else next(rest) for c in deck]


def deal(options=None, first_dealer=1, **cards):
    """A new match under ``options`` whose first deal is dealt from ``make_deck(**cards)``;
    with ``first_dealer=1`` seat 0 is the non-dealer (as in the rulebook's vectors)."""
    state = GAME.new_state(options or {}, first_dealer=first_dealer)
    state.deal(make_deck(options=options, **cards))
    return state


def act(state, *actions):
    """Apply actions for whoever is to act; return the state."""
    for a in actions:
        state.apply(a)
    return state


def to_play(state, *auction):
    """Run ``auction``, then every window by the auto-move policy (pass / no exchange) until
    trick play starts; return the state."""
    act(state, *auction)
    while state.public_view()["phase"] != "play":
        seat = state.to_act()
        state.apply(GAME.auto_move(state.view(seat)), seat)
    return state


def legal(state) -> list[str]:
    return state.legal_actions()


def plays(state) -> list[str]:
    """The cards of the legal plays (without announcements)."""
    return [a[5:] for a in state.legal_actions() if a.startswith("play:") and a.count(":") == 1]


def hand(state, seat) -> list[str]:
    return state.view(seat)["hand"]


def table(state) -> dict:
    return state.public_view()["table"]


def auto_finish_deal(state) -> dict:
    """Play the current deal to its end with the auto-move policy; return its result."""
    n = len(state.deal_results())
    while len(state.deal_results()) == n:
        seat = state.to_act()
        state.apply(GAME.auto_move(state.view(seat)), seat)
    return state.deal_results()[-1]
