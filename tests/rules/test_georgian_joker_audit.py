"""Independent rules audit of Georgian Joker (``shared/rules/georgian_joker.md``, NOTATION.md).

Two halves:

1. :class:`RefMatch`, a second implementation of the rulebook written from the text alone
   (card codes and lists, no bitmasks, no value tables, none of the engine's modules): the
   schedules (GJ-2.4, GJ-2.5), dealing and the indicator (GJ-3.2 .. GJ-3.8), bidding
   (GJ-4), legal cards (GJ-5.3 .. GJ-5.5), trick winners evaluated rule by rule in the
   rulebook's order (GJ-6.1 .. GJ-6.6), deal scores (GJ-7), pulka settlement (GJ-8), the
   match end (GJ-9) and the auto-move policy (GJ-12.2). It writes ``card-transcript/1``
   transcripts (NOTATION section 3) with every legal set and every result, and the engine
   must check them out through :func:`engine_service.rules.transcript.check`, exactly the way
   the hidden transcripts are checked. The drivers make premiums, moshla, khishti, joker
   indicators, joker leads and trump choices all happen (the tests assert they did).
2. Scripted scenarios, one per rule, with explicit decks laid out by the dealing procedure so
   that the hands are the ones written in the test (readable card codes; rule ids in names).
"""

from __future__ import annotations

import copy
import json
import random
from collections import Counter
from typing import Any, Callable

import pytest

from engine_service.rules import CHANCE, TERMINAL, IllegalAction, get_game, transcript

GAME = get_game("georgian_joker")

# ---- the reference model -------------------------------------------------------------------------

RANKS = "AKQJT9876"  # GJ-1.2, high to low
SUITS = "SHDC"
MODES = ("high", "low")
PACK = [r + s for s in SUITS for r in RANKS if r + s not in ("6S", "6C")] + ["X1", "X2"]  # GJ-1.1
DEFAULTS = {"deal_schedule": "standard", "khishti_penalty": "200", "pulka_premium": True,
            "moshla": "all_others", "high_joker_lead_trumpable": False, "turn_time_s": 30,
            "reconnect_grace_s": 60}
STANDARD_TABLE = [  # GJ-2.4, as the rulebook's table: (pulka, cards per deal)
    ("I", [1, 2, 3, 4, 5, 6, 7, 8]), ("II", [9, 9, 9, 9]),
    ("III", [8, 7, 6, 5, 4, 3, 2, 1]), ("IV", [9, 9, 9, 9]),
]


def joker(card: str) -> bool:
    return card[0] == "X"


def strength(card: str) -> int:
    return len(RANKS) - RANKS.index(card[0])


def schedule(options: dict) -> list[tuple[int, int]]:
    """(n, pulka number) of every deal (GJ-2.4, GJ-2.5)."""
    if options["deal_schedule"] == "nines":
        return [(9, -(-k // 4)) for k in range(1, 17)]  # pulka ceil(k / 4)
    return [(n, p + 1) for p, (_, ns) in enumerate(STANDARD_TABLE) for n in ns]


class RefMatch:
    """A whole match as the rulebook tells it. ``phase`` is ``chance``, ``trump``, ``bidding``,
    ``play`` or ``over``."""

    def __init__(self, options: dict, first_dealer: int) -> None:
        self.opt = {**DEFAULTS, **options}
        self.sched = schedule(self.opt)
        self.dealer = first_dealer  # GJ-2.2: given by the transcript
        self.k = 0  # 0-based index of the current (or next) deal
        self.totals = [0, 0, 0, 0]
        self.results: list[dict[str, Any]] = []
        self.phase = "chance"
        self.settlements: list[tuple[int, list[bool], list[int], list[int], list[int]]] = []

    # -- dealing (GJ-3) --
    def deal(self, deck: list[str]) -> None:
        assert self.phase == "chance" and sorted(deck) == sorted(PACK)
        self.n, self.pulka = self.sched[self.k]
        self.F = (self.dealer + 1) % 4  # GJ-0.3
        self.deck = list(deck)
        self.hands: list[list[str]] = [[], [], [], []]
        first = 4 * self.n if self.n <= 8 else 12  # GJ-3.2; GJ-3.5 phase A
        for k in range(first):
            self.hands[(self.F + k) % 4].append(deck[k])
        self.indicator = None
        if self.n <= 8:
            self.indicator = deck[4 * self.n]  # GJ-3.3
            self.trump = "NT" if joker(self.indicator) else self.indicator[1]
            self.phase = "bidding"
        else:
            self.trump = None
            self.phase = "trump"
        self.actor = self.F  # GJ-2.7: the forehand chooses, bids first and leads
        self.bid_order: list[tuple[int, int]] = []
        self.taken = [0, 0, 0, 0]
        self.trick: list[tuple[int, str, str | None, str | None]] = []  # seat, card, mode, named
        self.tricks_done = 0
        self.log: list[dict[str, Any]] = []  # completed tricks, for the coverage counters

    # -- legal actions --
    def legal(self) -> list[str]:
        if self.phase == "trump":
            return ["trump:" + t for t in ("S", "H", "D", "C", "NT")]  # GJ-3.5
        if self.phase == "bidding":
            bids = list(range(self.n + 1))  # GJ-4.2
            if len(self.bid_order) == 3:  # GJ-4.3: the dealer
                s = sum(b for _, b in self.bid_order)
                if s <= self.n:
                    bids.remove(self.n - s)
            return [f"bid:{b}" for b in bids]
        if self.phase != "play":
            return []
        hand = self.hands[self.actor]
        normal = [c for c in hand if not joker(c)]
        jokers = [c for c in hand if joker(c)]
        if not self.trick:  # GJ-5.1, GJ-5.2: a joker lead carries a mode and names a suit
            return ["play:" + c for c in normal] + [f"play:{j}:{m}:{s}" for j in jokers for m in MODES for s in SUITS]
        follow_jokers = [f"play:{j}:{m}" for j in jokers for m in MODES]  # GJ-5.3 step 1
        _, lead, lead_mode, named = self.trick[0]
        demand = named if joker(lead) else lead[1]
        own = [c for c in normal if c[1] == demand]
        if own:  # step 2; GJ-5.4 highest after a high joker lead; GJ-5.5 any after a low one
            if joker(lead) and lead_mode == "high":
                own = [max(own, key=strength)]
            return ["play:" + c for c in own] + follow_jokers
        if self.trump != "NT":  # step 3 (GJ-5.8: even when the trump cannot win)
            trumps = [c for c in normal if c[1] == self.trump]
            if trumps:
                return ["play:" + c for c in trumps] + follow_jokers
        return ["play:" + c for c in normal] + follow_jokers  # step 4

    # -- applying --
    def apply(self, action: str) -> None:
        assert action in self.legal(), (action, self.legal())
        verb, _, rest = action.partition(":")
        if verb == "trump":
            self.trump = rest
            for k in range(12, 36):  # GJ-3.5 phase B, same rotation
                self.hands[(self.F + k) % 4].append(self.deck[k])
            self.phase = "bidding"
            return
        if verb == "bid":
            self.bid_order.append((self.actor, int(rest)))
            self.actor = (self.actor + 1) % 4  # GJ-4.1: F, left(F), left(left(F)), dealer
            if len(self.bid_order) == 4:
                assert self.actor == self.F and self.bid_order[3][0] == self.dealer
                self.phase = "play"
            return
        parts = rest.split(":")
        card = parts[0]
        mode = parts[1] if len(parts) > 1 else None
        named = parts[2] if len(parts) > 2 else None
        self.hands[self.actor].remove(card)
        self.trick.append((self.actor, card, mode, named))
        if len(self.trick) < 4:
            self.actor = (self.actor + 1) % 4
            return
        winner = self.winner(self.trick)
        self.log.append({"trick": list(self.trick), "winner": winner, "trump": self.trump})
        self.taken[winner] += 1
        self.tricks_done += 1
        self.trick = []
        self.actor = winner  # GJ-5.9
        if self.tricks_done == self.n:
            assert not any(self.hands)
            self.score()

    def winner(self, plays: list[tuple[int, str, str | None, str | None]]) -> int:
        """GJ-6.1 .. GJ-6.6, in the rulebook's order."""
        T = self.trump
        lead_seat, lead, lead_mode, named = plays[0]
        Q = named if joker(lead) else lead[1]
        highs = [i for i, (_, c, m, _) in enumerate(plays) if joker(c) and m == "high"]
        trumps = [(strength(c), s) for s, c, _, _ in plays if not joker(c) and T != "NT" and c[1] == T]
        if highs:  # GJ-6.1, with the GJ-6.6 exception
            last = highs[-1]
            if (last == 0 and self.opt["high_joker_lead_trumpable"] and T != "NT" and Q != T and trumps):
                return max(trumps)[1]
            return plays[last][0]
        if trumps:  # GJ-6.2 (low jokers ignored)
            return max(trumps)[1]
        qs = [(strength(c), s) for s, c, _, _ in plays if not joker(c) and c[1] == Q]
        if qs:  # GJ-6.3
            return max(qs)[1]
        return lead_seat  # GJ-6.4

    # -- scoring (GJ-7, GJ-8, GJ-9) --
    def deal_score(self, b: int, t: int) -> int:
        n = self.n
        if t == b == n:
            return 100 * n
        if t == b == 0:
            return 50
        if t == b:
            return 50 * (b + 1)
        if b >= 1 and t == 0:
            return -{"200": 200, "500": 500, "100_per_card": 100 * n}[self.opt["khishti_penalty"]]
        return 10 * t

    def score(self) -> None:
        bids = [0, 0, 0, 0]
        for seat, b in self.bid_order:
            bids[seat] = b
        scores = [self.deal_score(bids[p], self.taken[p]) for p in range(4)]
        result: dict[str, Any] = {"trump": self.trump, "bids": bids, "taken": list(self.taken), "scores": scores}
        self.results.append(result)
        self.totals = [a + b for a, b in zip(self.totals, scores)]
        last_of_pulka = self.k + 1 == len(self.sched) or self.sched[self.k + 1][1] != self.pulka
        if last_of_pulka:
            deals = [r for r, (_, p) in zip(self.results, self.sched) if p == self.pulka]
            made = [all(r["bids"][p] == r["taken"][p] for r in deals) for p in range(4)]  # GJ-8.1
            best = [max(r["scores"][p] for r in deals) for p in range(4)]
            premium, moshla = [0] * 4, [0] * 4
            if self.opt["pulka_premium"]:  # GJ-8.4
                q = sum(made)
                cond = {"all_others": q >= 1, "single_premium_only": q == 1, "off": False}[self.opt["moshla"]]
                for p in range(4):
                    if made[p]:
                        premium[p] = best[p]  # GJ-8.2
                    elif cond:
                        moshla[p] = -max(0, best[p])  # GJ-8.3
            result["premium"], result["moshla"] = premium, moshla
            self.totals = [t + a + b for t, a, b in zip(self.totals, premium, moshla)]
            self.settlements.append((self.pulka, made, premium, moshla, best))
        self.k += 1
        if self.k == len(self.sched):
            self.phase = "over"  # GJ-9.1
        else:
            self.phase = "chance"
            self.dealer = (self.dealer + 1) % 4  # GJ-2.3, continuous

    def match_result(self) -> dict[str, Any]:
        over = self.phase == "over"
        top = max(self.totals)
        return {"totals": list(self.totals), "over": over,
                "winners": [p for p in range(4) if self.totals[p] == top] if over else []}  # GJ-9.3

    # -- GJ-12.2 --
    def auto(self) -> str:
        legal = self.legal()
        if self.phase == "trump":
            three = [c for c in self.hands[self.actor] if not joker(c)]
            count = Counter(c[1] for c in three)
            most = max(count.values())
            tied = [s for s in SUITS if count.get(s) == most]
            top = max(strength(c) for c in three if c[1] in tied)
            return "trump:" + [s for s in tied if any(c[1] == s and strength(c) == top for c in three)][0]
        if self.phase == "bidding":
            return min(legal, key=lambda a: int(a[4:]))
        normal = [a for a in legal if not joker(a[5:])]
        if normal:
            return min(normal, key=lambda a: (strength(a[5:]), SUITS.index(a[6])))
        j = "X1" if "X1" in self.hands[self.actor] else "X2"
        return f"play:{j}:low:S" if not self.trick else f"play:{j}:low"


# ---- transcripts written by the reference model --------------------------------------------------

Policy = Callable[[RefMatch, random.Random], str]


def random_policy(ref: RefMatch, rng: random.Random) -> str:
    return rng.choice(ref.legal())


class PlannedPolicy:
    """Knows every seat's tricks before bidding, so that chosen seats can make (or miss) their
    bids at will: premiums, moshla and khishti happen on purpose.

    Play is a function of the deal only (seeded random, or the auto-move policy), and legality
    never depends on bids, so a simulation of the deal on a copy gives every seat's tricks;
    ``plan(ref, taken, rng)`` then returns the bid of every seat.
    """

    def __init__(self, seed: int, plan: Callable[[RefMatch, list[int], random.Random], dict[int, int]],
                 play: str = "random", trump: str | None = None) -> None:
        self.seed = seed
        self.plan_bids = plan
        self.play = play
        self.trump = trump
        self.plan: dict[int, int] = {}
        self.play_rng = random.Random(0)

    def _play_rng(self, ref: RefMatch) -> random.Random:
        return random.Random(self.seed * 1000 + ref.k)

    def _card(self, ref: RefMatch, rng: random.Random) -> str:
        return ref.auto() if self.play == "auto" else rng.choice(ref.legal())

    def __call__(self, ref: RefMatch, rng: random.Random) -> str:
        if ref.phase == "trump":
            return f"trump:{self.trump}" if self.trump else rng.choice(ref.legal())
        if ref.phase == "bidding":
            if not ref.bid_order:
                sim = copy.deepcopy(ref)
                while sim.phase == "bidding":
                    sim.apply(sim.legal()[0])
                prng = self._play_rng(ref)
                while sim.phase == "play" and sim.k == ref.k:
                    sim.apply(self._card(sim, prng))
                self.plan = self.plan_bids(ref, sim.results[-1]["taken"], rng)
                self.play_rng = self._play_rng(ref)
            want = f"bid:{self.plan[ref.actor]}"
            assert want in ref.legal(), (want, ref.legal(), self.plan)
            return want
        return self._card(ref, self.play_rng)


def hero_plan(heroes_per_pulka: Callable[[int], set[int]]):
    """Heroes bid their tricks; when the dealer is a hero (its exact bid would otherwise be the
    forbidden one, GJ-4.3) the first non-hero before it misses on purpose and the others bid
    exactly, so that no two misses cancel out; otherwise non-heroes bid exactly or at random
    (never the dealer's forbidden value)."""

    def plan(ref: RefMatch, taken: list[int], rng: random.Random) -> dict[int, int]:
        heroes = heroes_per_pulka(ref.pulka)
        order = [(ref.F + i) % 4 for i in range(4)]
        spoiler = next(s for s in order[:3] if s not in heroes) if ref.dealer in heroes else None
        bids: dict[int, int] = {}
        for s in order:
            if s in heroes or (spoiler is not None and s != spoiler):
                bids[s] = taken[s]
            elif s == spoiler or rng.random() < 0.5:
                bids[s] = rng.choice([b for b in range(ref.n + 1) if b != taken[s]])
            else:
                bids[s] = taken[s]
        if sum(bids.values()) == ref.n:  # only possible when the dealer is not a hero
            bids[ref.dealer] = rng.choice([b for b in range(ref.n + 1) if b != bids[ref.dealer]])
        return bids

    return plan


def auto_policy(ref: RefMatch, rng: random.Random) -> str:
    return ref.auto()


def write_transcript(options: dict, seed: int, policy: Policy | None = None, deals: int | None = None,
                     decks: list[list[str]] | None = None, first_dealer: int | None = None,
                     stop_after_steps: int | None = None) -> tuple[dict[str, Any], RefMatch]:
    """Play (part of) a match in the reference model and write it as ``card-transcript/1``
    with every legal set, every deal result and the match result (NOTATION section 3)."""
    rng = random.Random(seed)
    policy = policy or random_policy
    first = rng.randrange(4) if first_dealer is None else first_dealer
    ref = RefMatch(options, first)
    out: dict[str, Any] = {"schema": "card-transcript/1", "game": "georgian_joker", "options": options,
                           "first_dealer": first, "deals": []}
    total = len(ref.sched) if deals is None else deals
    steps_done = 0
    while ref.phase != "over" and len(out["deals"]) < total:
        deck = decks[len(out["deals"])] if decks else rng.sample(PACK, len(PACK))
        entry: dict[str, Any] = {"deck": deck, "expect": {"dealer": ref.dealer}, "steps": []}
        out["deals"].append(entry)
        ref.deal(deck)
        while ref.phase not in ("chance", "over"):
            if stop_after_steps is not None and steps_done == stop_after_steps:
                out["result"] = ref.match_result()
                return out, ref
            action = policy(ref, rng)
            entry["steps"].append({"seat": ref.actor, "legal": ref.legal(), "action": action})
            ref.apply(action)
            steps_done += 1
        entry["result"] = copy.deepcopy(ref.results[-1])
    out["result"] = ref.match_result()
    return out, ref


def assert_checks_out(data: dict[str, Any]):
    """The engine replays the transcript with identical legal sets and results; the transcript
    goes through JSON first, so JSON types are what is compared (NOTATION section 3)."""
    data = transcript.loads(json.dumps(data))
    diff, state = transcript.check(data)
    assert diff is None, str(diff)
    return state


# ---- 1. the reference model against the engine over whole matches --------------------------------

OPTION_SETS = [
    {},
    {"deal_schedule": "nines"},
    {"khishti_penalty": "500", "moshla": "single_premium_only"},
    {"khishti_penalty": "100_per_card", "moshla": "off", "high_joker_lead_trumpable": True},
    {"pulka_premium": False},
    {"deal_schedule": "nines", "pulka_premium": False, "khishti_penalty": "100_per_card"},
    {"deal_schedule": "nines", "high_joker_lead_trumpable": True, "moshla": "single_premium_only"},
    {"deal_schedule": "nines", "khishti_penalty": "500", "moshla": "off"},
]


def coverage(ref: RefMatch, data: dict[str, Any], seen: Counter) -> None:
    for deal in data["deals"]:
        r = deal.get("result")
        if r is None:
            continue
        seen["trump " + r["trump"]] += 1
        n = sum(r["taken"])
        for b, t in zip(r["bids"], r["taken"]):
            seen["khishti" if b >= 1 and t == 0 else "made" if b == t else "missed"] += 1
            if b == t == n:
                seen["all bid and taken"] += 1
        for st in deal["steps"]:
            a = st["action"]
            if a.startswith("play:X"):
                seen["joker lead " + a.split(":")[2] if a.count(":") == 3 else "joker follow " + a.split(":")[2]] += 1
        if n <= 8 and deal["deck"][4 * n] in ("X1", "X2"):
            seen["joker indicator"] += 1
    for _, made, premium, moshla, best in ref.settlements:
        seen[f"qualifiers {min(sum(made), 2)}"] += 1
        if any(moshla):
            seen["moshla"] += 1


@pytest.mark.parametrize("options", OPTION_SETS, ids=[json.dumps(o) for o in OPTION_SETS])
def test_reference_random_matches_check_out_every_option(options):
    """Whole random matches (random decks, random legal actions, every joker mode and named
    suit, every trump choice): every legal set, dealer, deal result (GJ-7, GJ-8, NOTATION 4)
    and the match result (GJ-9) equal the reference model's."""
    seen: Counter = Counter()
    for seed in range(20):
        data, ref = write_transcript(options, seed=1000 + seed)
        state = assert_checks_out(data)
        assert state.is_over() and state.result() == ref.match_result()
        coverage(ref, data, seen)
    assert seen["khishti"] and seen["joker lead high"] and seen["joker lead low"]
    assert seen["joker follow high"] and seen["joker follow low"] and seen["trump NT"]
    if options.get("deal_schedule") != "nines":
        assert seen["joker indicator"] and seen["all bid and taken"]


def heroes_by_pulka(shift: int) -> Callable[[int], set[int]]:
    """Pulka I: nobody, II: one seat, III: two seats, IV: three seats (seats rotated by
    ``shift``; the same for ``nines``)."""
    return lambda pulka: {(s + shift) % 4 for s in [(), (2,), (0, 3), (1, 2, 3)][pulka - 1]}


@pytest.mark.parametrize("options", OPTION_SETS, ids=[json.dumps(o) for o in OPTION_SETS])
def test_reference_matches_with_qualifiers_check_out_gj_8(options):
    """GJ-8.1 .. GJ-8.6 under every option: pulkas with 0, 1, 2 and 3 qualifiers; premium and
    moshla only in the result of a pulka's last deal, zeros when off (NOTATION 4)."""
    seen: Counter = Counter()
    for seed in range(8):
        policy = PlannedPolicy(seed, hero_plan(heroes_by_pulka(seed)))
        data, ref = write_transcript(options, seed=2000 + seed, policy=policy)
        assert_checks_out(data)
        coverage(ref, data, seen)
        counts = [sum(made) for _, made, _, _, _ in ref.settlements]
        assert counts[0] >= 0 and counts[1] >= 1 and counts[2] >= 2 and counts[3] >= 3, counts
        ends = [i for i, d in enumerate(data["deals"]) if "premium" in d["result"]]
        assert ends == ([3, 7, 11, 15] if options.get("deal_schedule") == "nines" else [7, 11, 19, 23])
        for i, d in enumerate(data["deals"]):
            assert ("moshla" in d["result"]) == (i in ends)
    premium_on = options.get("pulka_premium", True)
    assert seen["qualifiers 1"] and seen["qualifiers 2"]
    assert bool(seen["moshla"]) == (premium_on and options.get("moshla", "all_others") != "off")


def every_option_combination() -> list[dict[str, Any]]:
    """Every combination of the rule-affecting options of GJ-13 (2 x 3 x 2 x 3 x 2 = 72), each
    written as a transcript writes it: only the values that differ from the defaults."""
    values = {"deal_schedule": ("standard", "nines"), "khishti_penalty": ("200", "500", "100_per_card"),
              "pulka_premium": (True, False), "moshla": ("all_others", "single_premium_only", "off"),
              "high_joker_lead_trumpable": (False, True)}
    combos: list[dict[str, Any]] = [{}]
    for name, allowed in values.items():
        combos = [{**c, **({} if v == DEFAULTS[name] else {name: v})} for c in combos for v in allowed]
    return combos


def test_reference_matches_check_out_under_every_option_combination_gj_13():
    """GJ-13: the options are independent house rules, so every combination of them must play
    exactly as the rulebook says (the interactions: khishti penalties inside the premium and
    moshla bests, GJ-8.4 over GJ-8.3, GJ-6.6 under both schedules). One whole match per
    combination, alternately random and planned (qualifiers in every pulka but the first),
    against the reference model."""
    combos = every_option_combination()
    assert len(combos) == 72 and combos[0] == {}
    for i, options in enumerate(combos):
        seed = 5000 + i
        policy = PlannedPolicy(seed, hero_plan(heroes_by_pulka(i))) if i % 2 else random_policy
        data, ref = write_transcript(options, seed=seed, policy=policy)
        state = assert_checks_out(data)
        assert state.is_over() and state.result() == ref.match_result(), options


def test_reference_partial_transcripts_check_out_notation_3():
    """NOTATION 3: a transcript stopping inside a deal has no result for that deal and the
    match totals are those of the deals already scored; ``winners`` stays empty."""
    for stop in (0, 1, 7, 30, 55):
        data, ref = write_transcript({}, seed=7, stop_after_steps=stop)
        assert "result" not in data["deals"][-1]
        assert data["result"]["over"] is False and data["result"]["winners"] == []
        assert_checks_out(data)
    data, _ = write_transcript({"deal_schedule": "nines"}, seed=8, deals=5)
    assert data["result"]["over"] is False
    assert_checks_out(data)


def test_reference_mismatch_is_detected():
    """The differential check is not vacuous: a changed legal set, result or total fails."""
    data, _ = write_transcript({"deal_schedule": "nines"}, seed=3, deals=4)
    for mutate, what in (
        (lambda d: d["deals"][0]["steps"][0]["legal"].pop(), "legal"),
        (lambda d: d["deals"][1]["steps"][1]["legal"].append("bid:10"), "legal"),
        (lambda d: d["deals"][3]["result"]["moshla"].__setitem__(0, 1), "result.moshla"),
        (lambda d: d["deals"][2]["result"].__setitem__("premium", [0, 0, 0, 0]), "result.premium"),
        (lambda d: d["deals"][2].__setitem__("expect", {"dealer": (d["deals"][2]["expect"]["dealer"] + 1) % 4}),
         "expect.dealer"),
        (lambda d: d["result"]["totals"].__setitem__(1, d["result"]["totals"][1] + 10), "result.totals"),
    ):
        bad = copy.deepcopy(data)
        mutate(bad)
        diff, _ = transcript.check(transcript.loads(json.dumps(bad)))
        assert diff is not None and diff.what == what, (what, diff)


def test_auto_move_matches_the_reference_policy_gj_12_2():
    """GJ-12.2 from each seat's view: at every decision of auto-played matches of both
    schedules (trump choice, smallest legal bid, lowest legal normal card, jokers last)."""
    for options, seed in (({}, 5), ({"deal_schedule": "nines"}, 6), ({"deal_schedule": "nines"}, 9)):
        rng = random.Random(seed)
        ref = RefMatch(options, rng.randrange(4))
        state = GAME.new_state(options, first_dealer=ref.dealer)
        decisions = 0
        while ref.phase != "over":
            deck = rng.sample(PACK, len(PACK))
            ref.deal(deck)
            state.deal(deck)
            while ref.phase not in ("chance", "over"):
                view = state.view(ref.actor)
                assert sorted(view["hand"]) == sorted(ref.hands[ref.actor])
                expected = ref.auto()
                assert GAME.auto_move(view) == expected, (view["hand"], view["legal"])
                # mix in random moves so that joker-only hands and odd spots come up
                action = expected if rng.random() < 0.7 else rng.choice(ref.legal())
                state.apply(action, ref.actor)
                ref.apply(action)
                decisions += 1
        assert state.result() == ref.match_result()
        assert decisions > 300


def test_shared_first_place_gj_9_3():
    """GJ-9.3 / GJ-A14: equal top totals share first place, ``winners`` lists them all (auto-move
    matches whose top totals tie; the seeds were found with the reference model)."""
    for options, seed in (({"deal_schedule": "nines"}, 19), ({"deal_schedule": "nines"}, 24), ({}, 5)):
        data, ref = write_transcript(options, seed=seed, policy=auto_policy)
        assert data["result"]["over"] is True and len(data["result"]["winners"]) == 2, data["result"]
        state = assert_checks_out(data)
        assert state.result()["winners"] == data["result"]["winners"]


# ---- 2. scripted scenarios --------------------------------------------------------------------------

def layout(hands: dict[int, str], dealer: int, indicator: str | None = None) -> list[str]:
    """The deck that deals ``hands`` by GJ-3.2 / GJ-3.5: card ``r`` of seat ``s`` is
    ``deck[4r + (s - F) mod 4]``; then the indicator (``n <= 8``), then the stock in pack
    order."""
    cards = {s: h.split() for s, h in hands.items()}
    dealt = [c for h in cards.values() for c in h] + ([indicator] if indicator else [])
    assert len(set(dealt)) == len(dealt), f"a card is dealt twice: {sorted(dealt)}"
    n = len(cards[0])
    F = (dealer + 1) % 4
    deck: list[str] = [""] * (4 * n)
    for s, hand in cards.items():
        assert len(hand) == n
        for r, c in enumerate(hand):
            deck[4 * r + (s - F) % 4] = c
    if indicator is not None:
        deck.append(indicator)
    deck += [c for c in PACK if c not in deck]
    assert sorted(deck) == sorted(PACK), deck
    return deck


def play_deal_by_auto_move(state) -> None:
    while state.to_act() >= 0:
        state.apply(GAME.auto_move(state.view(state.to_act())))


_PREFIX: dict[str, Any] = {}


def at_deal(number: int, options: dict | None = None, first_dealer: int = 0):
    """The engine waiting for the deck of deal ``number`` (1-based); the deals before are played
    by the auto-move policy on random decks."""
    key = json.dumps([number, options or {}, first_dealer], sort_keys=True)
    if key not in _PREFIX:
        rng = random.Random(number)
        state = GAME.new_state(options or {}, first_dealer=first_dealer)
        for _ in range(number - 1):
            state.deal(rng.sample(PACK, len(PACK)))
            play_deal_by_auto_move(state)
        _PREFIX[key] = state
    state = _PREFIX[key].clone()
    assert state.to_act() == CHANCE and len(state.deal_results()) == number - 1
    return state


def bid_all(state, bids: list[int] | None = None) -> None:
    """Four bids in bidding order (default: the smallest legal bid each)."""
    for i in range(4):
        state.apply(f"bid:{bids[i]}" if bids else state.legal_actions()[0])


def test_dealing_one_card_at_a_time_from_the_forehand_gj_3_2_gj_3_3_gj_3_4():
    """Deal 2 (n = 2, dealer 2, forehand 3): deck[k] goes to seat (3 + k) mod 4, deck[8] is the
    indicator (AH: hearts are trump); no stock card ever reaches any view."""
    state = at_deal(2, first_dealer=1)
    assert state.dealer() == 2
    deck = ["AS", "KS", "QS", "JS", "TS", "9S", "8S", "7S", "AH",
            "KH", "QH", "JH", "TH", "9H", "8H", "7H", "6H", "AD", "KD", "QD", "JD", "TD", "9D", "8D",
            "7D", "6D", "AC", "KC", "QC", "JC", "TC", "9C", "8C", "7C", "X1", "X2"]
    state.deal(deck)
    hands = {s: sorted(state.view(s)["hand"]) for s in range(4)}
    assert hands == {3: sorted(["AS", "TS"]), 0: sorted(["KS", "9S"]), 1: sorted(["QS", "8S"]),
                     2: sorted(["JS", "7S"])}
    table = state.public_view()["table"]
    assert table["trump_indicator"] == "AH" and table["trump"] == "H"
    assert table["forehand"] == 3 and table["cards_per_player"] == 2 and state.to_act() == 3
    stock = set(deck[9:])
    play_deal_by_auto_move(state)
    assert state.deal_results()[-1]["trump"] == "H"
    texts = json.dumps([state.public_view()] + [state.view(s) for s in range(4)])
    assert not any(f'"{c}"' in texts for c in stock)


def test_joker_indicator_no_trump_and_that_joker_out_of_play_gj_3_3_gj_3_8_gj_5_3():
    """Indicator X2: the deal is NT, X2 is never playable; a player void in the lead suit may
    play anything (no trump to force), and the lead suit wins over any discard."""
    state = at_deal(3, first_dealer=0)  # dealer 2, forehand 3
    state.deal(layout({3: "9H AS KS", 0: "AD KD QD", 1: "X1 7H 8C", 2: "AC KC QC"}, dealer=2, indicator="X2"))
    assert state.public_view()["table"]["trump"] == "NT"
    bid_all(state)
    state.apply("play:9H")
    assert set(state.legal_actions()) == {"play:AD", "play:KD", "play:QD"}  # GJ-5.3 step 4
    state.apply("play:AD")
    assert set(state.legal_actions()) == {"play:7H", "play:X1:high", "play:X1:low"}
    state.apply("play:X1:low")
    assert set(state.legal_actions()) == {"play:AC", "play:KC", "play:QC"}
    state.apply("play:AC")
    assert state.public_view()["last_trick"]["winner"] == 3  # GJ-6.3, GJ-6.5
    while state.to_act() >= 0:
        assert not any("X2" in a for a in state.legal_actions())
        state.apply(state.legal_actions()[0])
    assert state.deal_results()[-1]["trump"] == "NT"


def test_nine_card_deal_two_phases_forehand_chooses_gj_3_5_gj_3_6_gj_2_7():
    """Nines deal 1, dealer 0, forehand 1: the forehand alone acts, its legal set is the five
    strains; every seat holds only its phase-A cards deck[i], deck[i+4], deck[i+8]; after
    ``trump:NT`` phase B continues the rotation and the forehand bids first."""
    state = GAME.new_state({"deal_schedule": "nines"}, first_dealer=0)
    deck = PACK[:]
    random.Random(4).shuffle(deck)
    state.deal(deck)
    assert state.to_act() == 1
    assert state.legal_actions() == ["trump:S", "trump:H", "trump:D", "trump:C", "trump:NT"]
    for s in range(4):
        i = (s - 1) % 4
        assert sorted(state.view(s)["hand"]) == sorted([deck[i], deck[i + 4], deck[i + 8]])
        assert state.view(s)["legal"] == ([] if s != 1 else state.legal_actions())
    assert state.public_view()["table"]["trump"] is None
    with pytest.raises(IllegalAction):
        state.apply("bid:1")
    state.apply("trump:NT", 1)
    for s in range(4):
        i = (s - 1) % 4
        assert sorted(state.view(s)["hand"]) == sorted(deck[i::4])
    assert state.to_act() == 1 and state.legal_actions() == [f"bid:{b}" for b in range(10)]
    assert state.public_view()["table"]["trump"] == "NT"


@pytest.mark.parametrize("n_deal, bids, legal_last", [
    (1, [0, 0, 0], [1 - 1]),  # s = 0: 1 forbidden
    (1, [1, 0, 0], [1]),  # s = 1 = n: 0 forbidden
    (1, [1, 1, 0], [0, 1]),  # s > n: nothing forbidden
    (3, [1, 0, 1], [0, 2, 3]),  # the seed's deal: 1 forbidden (GJ-15.3)
    (3, [1, 1, 1], [1, 2, 3]),  # rulebook example: 0 forbidden
    (3, [2, 1, 1], [0, 1, 2, 3]),  # rulebook example: nothing forbidden
    (9, [2, 2, 3], [0, 1, 3, 4, 5, 6, 7, 8, 9]),  # rulebook example: 2 forbidden
    (9, [9, 0, 0], [1, 2, 3, 4, 5, 6, 7, 8, 9]),
    (9, [9, 9, 9], list(range(10))),
])
def test_bidding_order_and_the_dealers_forbidden_bid_gj_4_1_gj_4_3(n_deal, bids, legal_last):
    """Bids in order F, left(F), left(left(F)), dealer, each 0..n; the dealer may not make the
    sum n (GJ-4.3); a rejected bid leaves the state unchanged (GJ-4.5)."""
    if n_deal == 9:
        state = GAME.new_state({"deal_schedule": "nines"}, first_dealer=2)
        state.deal(PACK)
        state.apply("trump:H")
    else:
        state = at_deal(n_deal, first_dealer=(2 - (n_deal - 1)) % 4)
        state.deal(PACK)
    assert state.dealer() == 2
    for i, b in enumerate(bids):
        assert state.to_act() == (3 + i) % 4
        assert state.legal_actions() == [f"bid:{v}" for v in range(n_deal + 1)]
        state.apply(f"bid:{b}")
    assert state.to_act() == 2
    assert state.legal_actions() == [f"bid:{v}" for v in legal_last]
    forbidden = [v for v in range(n_deal + 1) if v not in legal_last]
    for bad in forbidden + [n_deal + 1]:
        before = json.dumps([state.legal_actions(), state.public_view()])
        with pytest.raises(IllegalAction):
            state.apply(f"bid:{bad}", 2)
        assert json.dumps([state.legal_actions(), state.public_view()]) == before
    state.apply(f"bid:{legal_last[0]}", 2)
    assert state.to_act() == 3  # GJ-5.9: the forehand leads
    assert [a for a in state.public_view()["table"]["bids"]] == [bids[1], bids[2], legal_last[0], bids[0]]


# Trick cases in deal 4 (n = 4, first dealer 0 so dealer 3 and forehand 0, who leads). Each:
# indicator, the four hands (seat 0 leads), the four plays in order, legal sets to check by seat,
# and the winner with ``high_joker_lead_trumpable`` false and true (GJ-6.6).
TRICKS = {
    "gj_5_3_2_follow_any_rank_gj_6_3_highest_of_lead_suit": (
        "TD", ["9H AS KS QS", "KH 6H JS TS", "7H AC KC QC", "9S 8S 7S JC"],
        "9H KH 7H 9S", {1: "KH 6H", 3: "9S 8S 7S JC"}, (1, 1)),
    "gj_5_3_3_any_trump_even_below_one_played_gj_6_2": (
        "TD", ["AH 7S 8S 9S", "KD 8C 7C 9C", "8D 7D AS KS", "KH QH JH 6H"],
        "AH KD 7D 6H", {1: "KD", 2: "8D 7D", 3: "KH QH JH 6H"}, (1, 1)),
    "gj_6_5_discard_never_wins": (
        "TD", ["7H 7S 8S 9S", "AS KS QS JS", "AC KC QC JC", "8H 6H TS 9C"],
        "7H AS AC 8H", {1: "AS KS QS JS", 3: "8H 6H"}, (3, 3)),
    "gj_6_1_high_joker_beats_the_trump_ace_gj_5_3_1": (
        "TD", ["KH 7S 8S 9S", "AD 6D AS KS", "X1 9C 8C 7C", "AH QS JS TS"],
        "KH AD X1:high AH", {1: "AD 6D", 2: "9C 8C 7C X1:high X1:low", 3: "AH"}, (2, 2)),
    "gj_6_1_two_high_jokers_the_later_wins": (
        "TD", ["7S 8H 9H TH", "X1 KS 9C 8C", "X2 7H 7C 6H", "AS QS 8D 7D"],
        "7S X1:high X2:high AS", {1: "KS X1:high X1:low", 3: "AS QS"}, (2, 2)),
    "gj_6_1_high_joker_beats_an_earlier_low_joker": (
        "TD", ["7S 8H 9H TH", "X1 KS 9C 8C", "X2 7H 7C 6H", "AS QS 8D 7D"],
        "7S X1:low X2:high AS", {}, (2, 2)),
    "gj_6_1_high_joker_beats_a_later_low_joker": (
        "TD", ["7S 8H 9H TH", "X1 KS 9C 8C", "X2 7H 7C 6H", "AS QS 8D 7D"],
        "7S X1:high X2:low AS", {}, (1, 1)),
    "gj_5_6_a_joker_does_not_change_the_obligation": (
        "TD", ["7S 8H 9H TH", "X1 KS 9C 8C", "8S AH KH QH", "AS QS 8D 7D"],
        "7S X1:high 8S AS", {2: "8S", 3: "AS QS"}, (1, 1)),
    "gj_6_2_low_joker_ignored_lead_suit_wins": (
        "TD", ["7S 8H 9H TH", "X1 KS 9C 8C", "8S 7H 7C 6H", "AC QC JC TC"],
        "7S X1:low 8S AC", {3: "AC QC JC TC"}, (2, 2)),
    "gj_6_2_low_joker_ignored_trump_wins": (
        "TD", ["7S 8H 9H TH", "X1 KS 9C 8C", "8S 7H 7C 6H", "8D 7D AC QC"],
        "7S X1:low 8S 7D", {3: "8D 7D"}, (3, 3)),
    "gj_6_2_low_joker_ignored_leader_keeps": (
        "TD", ["7S 8H 9H TH", "X1 KS 9C 8C", "7H 7C 6H JH", "AC QC JC TC"],
        "7S X1:low 7C AC", {2: "7H 7C 6H JH"}, (0, 0)),
    "gj_5_4_high_joker_lead_highest_named_card_gj_5_8_must_trump_gj_6_6": (
        "TD", ["X1 7S 8S 9S", "QH 7H AS KS", "7D 9D AC KC", "QS JS TS 9C"],
        "X1:high:H QH 7D 9C", {1: "QH", 2: "9D 7D", 3: "QS JS TS 9C"}, (0, 2)),
    "gj_6_6_no_trump_played_the_leading_joker_keeps": (
        "TD", ["X1 7S 8S 9S", "QH 7H AS KS", "KH 6H AC KC", "AH JH 9C 8C"],
        "X1:high:H QH KH AH", {2: "KH", 3: "AH"}, (0, 0)),
    "gj_5_4_high_joker_naming_the_trump_highest_trump_gj_6_6_not_trumpable": (
        "TD", ["X1 7S 8S 9S", "KD 8D 6D AS", "9C 8C 7C KS", "AD 7D AH KH"],
        "X1:high:D KD 9C AD", {1: "KD", 2: "9C 8C 7C KS", 3: "AD"}, (0, 0)),
    "gj_5_2_joker_lead_naming_a_suit_in_nt_gj_6_6_not_trumpable": (
        "X2", ["X1 7S 8S 9S", "QH 7H AS KS", "AD KD QD JD", "9C 8C 7C TC"],
        "X1:high:H QH AD 9C", {1: "QH", 2: "AD KD QD JD", 3: "9C 8C 7C TC"}, (0, 0)),
    "gj_6_1_high_joker_lead_then_a_second_high_joker": (
        "TD", ["X1 7H 8H 9H", "KS 9S 7C 8C", "X2 8D 7D 6D", "AS QS JS TS"],
        "X1:high:S KS X2:high AS", {1: "KS", 2: "8D 7D 6D X2:high X2:low", 3: "AS"}, (2, 2)),
    "gj_6_7_high_joker_lead_second_low_and_a_trump": (
        "TD", ["X1 7S 8S 9S", "X2 AS KS QS", "9D 8D 7C 9C", "8H 7H 6H JS"],
        "X1:high:H X2:low 9D 8H", {1: "AS KS QS X2:high X2:low", 2: "9D 8D", 3: "8H"}, (0, 2)),
    "gj_5_5_low_joker_lead_any_named_card_trump_wins": (
        "TD", ["X1 7S 8S 9S", "QH 7H AS KS", "9H KC QC JC", "6D AC TS JS"],
        "X1:low:H 7H 9H 6D", {1: "QH 7H", 2: "9H", 3: "6D"}, (3, 3)),
    "gj_6_3_low_joker_lead_highest_named_card": (
        "TD", ["X1 7S 8S 9S", "QH 7H AS KS", "9H KC QC JC", "AC TS JS TC"],
        "X1:low:H 7H 9H AC", {3: "AC TS JS TC"}, (2, 2)),
    "gj_6_4_low_joker_lead_nobody_follows_the_leader_keeps": (
        "TD", ["X1 7S 8S 9S", "AS KS QS JS", "AC KC QC JC", "TS TC 9C 8C"],
        "X1:low:H AS AC TS", {1: "AS KS QS JS"}, (0, 0)),
    "gj_6_1_low_joker_lead_then_a_high_joker": (
        "TD", ["X1 7H 8H 9H", "X2 KS 9C 8C", "AS QC JC TC", "7D QS JS TS"],
        "X1:low:S X2:high AS QS", {1: "KS X2:high X2:low", 2: "AS", 3: "QS JS TS"}, (1, 1)),
    "gj_6_4_both_jokers_low_leader_keeps_gj_a9": (
        "TD", ["X1 7H 8H 9H", "X2 KS QS JS", "AS TS 9S 8S", "AH KH QH JH"],
        "X1:low:C X2:low AS AH", {2: "AS TS 9S 8S", 3: "AH KH QH JH"}, (0, 0)),
    "gj_6_2_both_jokers_low_a_trump_wins": (
        "TD", ["X1 7H 8H 9H", "X2 KS QS JS", "AS TS 9S 8S", "7D KH QH JH"],
        "X1:low:C X2:low AS 7D", {3: "7D"}, (3, 3)),
}


@pytest.mark.parametrize("trumpable", [False, True])
@pytest.mark.parametrize("case", list(TRICKS), ids=list(TRICKS))
def test_trick_cases_legal_sets_and_winner_gj_5_gj_6(case, trumpable):
    indicator, hands, plays, legal, winners = TRICKS[case]
    state = at_deal(4, {"high_joker_lead_trumpable": trumpable})
    assert state.dealer() == 3
    state.deal(layout(dict(enumerate(hands)), dealer=3, indicator=indicator))
    bid_all(state)
    for i, play in enumerate(plays.split()):
        assert state.to_act() == i
        if i in legal:
            expected = {f"play:{c}" for c in legal[i].split()}
            assert set(state.legal_actions()) == expected and len(state.legal_actions()) == len(expected)
        state.apply(f"play:{play}", i)
    winner = winners[trumpable]
    assert state.public_view()["last_trick"]["winner"] == winner
    assert state.to_act() == winner and state.public_view()["tricks_taken"][winner] == 1


def test_joker_play_forms_gj_5_10():
    """A joker lead must carry a mode and a named suit, a joker that follows only a mode; a
    normal card carries neither."""
    state = at_deal(4)
    state.deal(layout({0: "X1 7S 8S 9S", 1: "X2 KS 9C 8C", 2: "AS QC JC TC", 3: "7D QS JS TS"}, 3, "TD"))
    bid_all(state)
    for bad in ("play:X1:high", "play:X1:low", "play:X2:high:S", "play:AS"):
        with pytest.raises(IllegalAction):
            state.apply(bad, 0)
    assert len([a for a in state.legal_actions() if a.startswith("play:X1:")]) == 8
    state.apply("play:X1:low:S", 0)
    for bad in ("play:X2:high:S", "play:X2:low:H"):
        with pytest.raises(IllegalAction):
            state.apply(bad, 1)
    state.apply("play:X2:high", 1)
    assert state.public_view()["trick"][0] == {"seat": 0, "card": "X1", "joker_mode": "low", "named_suit": "S"}
    assert state.public_view()["trick"][1] == {"seat": 1, "card": "X2", "joker_mode": "high"}


@pytest.mark.parametrize("khishti, penalty", [("200", -200), ("500", -500), ("100_per_card", -400)])
def test_all_bid_and_all_taken_pass_and_khishti_gj_7_1_gj_7_2_gj_7_4(khishti, penalty):
    """Deal 4 (n = 4), trump S: seat 0 bids 4 and takes all four: 400 (GJ-7.1); seat 2 passes
    and takes none: 50 (GJ-7.2); seats 1 and 3 bid and take nothing: khishti (GJ-7.4, -100 per
    card = -400 here)."""
    state = at_deal(4, {"khishti_penalty": khishti})
    state.deal(layout({0: "AS KS QS JS", 1: "AH KH QH JH", 2: "AD KD QD JD", 3: "AC KC QC JC"}, 3, "TS"))
    bid_all(state, [4, 1, 0, 2])
    for rank in "AKQJ":
        for seat, card in enumerate([rank + "S", rank + "H", rank + "D", rank + "C"]):
            state.apply(f"play:{card}", seat)
    r = state.deal_results()[-1]
    assert r == {"trump": "S", "bids": [4, 1, 0, 2], "taken": [4, 0, 0, 0], "scores": [400, penalty, 50, penalty]}


def test_exact_bid_and_misses_gj_7_3_gj_7_5():
    """Bid 2 won 2: 150 (GJ-7.3); bid 3 won 2: 20 (GJ-7.5); passes made: 50."""
    state = at_deal(4)
    totals = state.result()["totals"]
    state.deal(layout({0: "AS KS 6H 7H", 1: "QS JS AH KH", 2: "9S 8S QH JH", 3: "7S TS 9H 8H"}, 3, "TD"))
    bid_all(state, [2, 3, 0, 0])
    for trick in ("AS QS 9S 7S", "KS JS 8S TS"):
        for seat, card in enumerate(trick.split()):
            state.apply(f"play:{card}", seat)
    for seat, card in ((0, "6H"), (1, "AH"), (2, "QH"), (3, "9H"), (1, "KH"), (2, "JH"), (3, "8H"), (0, "7H")):
        state.apply(f"play:{card}", seat)
    r = state.deal_results()[-1]
    assert r == {"trump": "D", "bids": [2, 3, 0, 0], "taken": [2, 2, 0, 0], "scores": [150, 20, 50, 50]}
    assert state.result()["totals"] == [before + s for before, s in zip(totals, [150, 20, 50, 50])]


VILLAIN = "6H 7H 8H 6D 7D 8D 7C 8C 9C"  # the lowest three of H, D, C; no spade, no joker


def villain_pulka_decks(first_dealer: int, seed: int) -> list[list[str]]:
    """Four nine-card decks: seat 2 always holds VILLAIN, the other 27 cards go at random to
    seats 0, 1, 3. With spades trump and the auto-move policy, seat 2 never wins a trick: it
    follows suit only below the card led by another seat, leads only trick 1 (as forehand,
    its 6H, beaten by the other hearts), and has no trump."""
    rng = random.Random(seed)
    rest = [c for c in PACK if c not in VILLAIN.split()]
    decks = []
    for k in range(4):
        rng.shuffle(rest)
        hands = {0: " ".join(rest[0:9]), 1: " ".join(rest[9:18]), 2: VILLAIN, 3: " ".join(rest[18:27])}
        decks.append(layout(hands, (first_dealer + k) % 4))
    return decks


def villain_plan(ref: RefMatch, taken: list[int], rng: random.Random) -> dict[int, int]:
    """Seat 0 bids its tricks, seat 2 bids 1 and takes none, seats 1 and 3 miss by one: the
    three misses never cancel, so seat 0's bid is never forbidden."""
    assert taken[2] == 0
    return {0: taken[0], 1: taken[1] + 1 if taken[1] < 9 else 8, 2: 1, 3: taken[3] + 1 if taken[3] < 9 else 8}


@pytest.mark.parametrize("options", [
    {}, {"khishti_penalty": "100_per_card"}, {"moshla": "single_premium_only"}, {"moshla": "off"},
    {"pulka_premium": False},
])
def test_moshla_never_adds_back_a_negative_best_gj_8_3_gj_a4(options):
    """Nines pulka I: seat 0 makes all four bids and gets its best deal again (GJ-8.2); seat 2
    scores only khishti, so its best is negative and its moshla is 0 (GJ-8.3, GJ-A4); seats 1
    and 3 lose their best (floored at 0) when the option says so; all zeros with
    ``pulka_premium = false``, still present (NOTATION 4)."""
    options = {"deal_schedule": "nines", **options}
    policy = PlannedPolicy(0, villain_plan, play="auto", trump="S")
    data, ref = write_transcript(options, seed=0, policy=policy, deals=4, first_dealer=3,
                                 decks=villain_pulka_decks(3, seed=11))
    assert_checks_out(data)
    results = [d["result"] for d in data["deals"]]
    penalty = -900 if options.get("khishti_penalty") == "100_per_card" else -200
    assert [r["scores"][2] for r in results] == [penalty] * 4
    assert all(r["bids"][0] == r["taken"][0] for r in results)
    assert all("premium" not in r for r in results[:3])
    last = results[3]
    on = options.get("pulka_premium", True)
    best = [max(r["scores"][p] for r in results) for p in range(4)]
    assert last["premium"] == ([best[0], 0, 0, 0] if on else [0, 0, 0, 0])
    cancel = on and options.get("moshla", "all_others") != "off"
    assert last["moshla"] == [0, -max(0, best[1]) if cancel else 0, 0, -max(0, best[3]) if cancel else 0]
    assert data["result"]["totals"] == [sum(r["scores"][p] for r in results) + last["premium"][p] + last["moshla"][p]
                                        for p in range(4)]


@pytest.mark.parametrize("options, table", [
    ({}, [(1, 1), (1, 2), (1, 3), (1, 4), (1, 5), (1, 6), (1, 7), (1, 8), (2, 9), (2, 9), (2, 9), (2, 9),
          (3, 8), (3, 7), (3, 6), (3, 5), (3, 4), (3, 3), (3, 2), (3, 1), (4, 9), (4, 9), (4, 9), (4, 9)]),
    ({"deal_schedule": "nines"}, [(k // 4 + 1, 9) for k in range(16)]),
])
def test_schedule_dealer_rotation_and_pulka_ends_gj_2_3_gj_2_4_gj_2_5_gj_2_6(options, table):
    """Per deal: pulka and n as the rulebook's tables, every hand of n cards, dealer rotating
    clockwise without reset (so each seat deals 6 or 4 times, GJ-2.6), forehand left of the dealer;
    premium and moshla only in the result of each pulka's last deal; the match ends after the
    last deal (GJ-9.1)."""
    rng = random.Random(2)
    state = GAME.new_state(options, first_dealer=2)
    dealers = []
    for k, (pulka, n) in enumerate(table):
        assert state.to_act() == CHANCE
        dealers.append(state.dealer())
        state.deal(rng.sample(PACK, len(PACK)))
        t = state.public_view()["table"]
        assert (t["deal"], t["pulka"], t["cards_per_player"]) == (k + 1, pulka, n)
        assert t["forehand"] == (state.dealer() + 1) % 4 == state.to_act()
        if n == 9:
            state.apply("trump:C")
        assert state.public_view()["hand_sizes"] == [n] * 4
        play_deal_by_auto_move(state)
        last_of_pulka = k + 1 == len(table) or table[k + 1][0] != pulka
        assert ("premium" in state.deal_results()[-1]) == last_of_pulka
    assert dealers == [(2 + k) % 4 for k in range(len(table))]
    assert Counter(dealers) == {s: len(table) // 4 for s in range(4)}
    assert state.to_act() == TERMINAL and state.result()["over"] is True


@pytest.mark.parametrize("three, trump", [
    ("7H 8H AS", "H"), ("AS KH 7D", "S"), ("KH KD 7C", "H"), ("X1 9C 9D", "D"), ("X1 X2 7C", "C"),
    ("QC JC X2", "C"), ("6D TC 9H", "C"), ("8S 8H 8D", "S"),
])
def test_auto_trump_choice_gj_12_2(three, trump):
    """Most normal cards; ties to the tied suit holding the highest card; then S, H, D, C;
    never NT. Checked through the chooser's own view in a real nine-card deal."""
    state = GAME.new_state({"deal_schedule": "nines"}, first_dealer=3)
    rest = [c for c in PACK if c not in three.split()]
    state.deal(three.split()[:1] + rest[:3] + three.split()[1:2] + rest[3:6] + three.split()[2:] + rest[6:])
    view = state.view(0)
    assert sorted(view["hand"]) == sorted(three.split())
    assert GAME.auto_move(view) == f"trump:{trump}"
