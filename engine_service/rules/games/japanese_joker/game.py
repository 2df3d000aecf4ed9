"""The Japanese Joker game definition: identity, pack, table options (JJK-11), the first
declarer draw, the auto-move policy (JJK-10.4), determinization and explicit positions."""

from __future__ import annotations

import random
from typing import Any, Mapping, Sequence

from ...cards import PACK36_JOKERS, PACK36_JOKERS_MASK, SUIT_INDEX, card_id, mask_of, parse_deck
from ...game import Game
from ...errors import InvalidOptions
from ...options import INT, Options, OptionSpec
from .state import PLAY, JapaneseJokerState
from .tables import ACTION_LEAD_KEY, TRUMP_MASK

OPTION_SPECS: tuple[OptionSpec, ...] = (
    OptionSpec("target_score", INT, 21, values=(21, 11, 15, 31),
               help="match points that end the match: the first player to reach them after a "
                    "deal wins", rules=("JJK-8.1", "JJK-8.2")),
    OptionSpec("turn_time_s", INT, 30, minimum=10, maximum=120,
               help="seconds a player has for each decision before the system moves for them "
                    "(the auto-move policy)", rules=("JJK-10.3", "JJK-10.4")),
    OptionSpec("reconnect_grace_s", INT, 60, minimum=15, maximum=600,
               help="seconds the server waits for a disconnected player before the match is "
                    "lost for them", rules=("JJK-10.2",)),
)


class JapaneseJokerGame(Game):
    """Japanese Joker (rulebook ``japanese_joker.md``): two players, 18 tricks a deal."""

    id = "japanese_joker"
    name = "Japanese Joker"
    rulebook = "japanese_joker.md"
    num_seats = 2  # JJK-2.1: exactly two players
    pack = PACK36_JOKERS
    pack_mask = PACK36_JOKERS_MASK
    pack_set = frozenset(PACK36_JOKERS)
    option_specs = OPTION_SPECS
    draw_keys = ("first_declarer", "declarer")
    description = ("Two players, no bidding: three cards, the declarer's trump, then five cards "
                   "in hand and five face-down/face-up columns each; the deal goes to the player "
                   "with more of the 18 tricks, by the difference.")

    def new_state(self, options: Mapping[str, Any] | Options | None = None,
                  first_dealer: int = 0) -> JapaneseJokerState:
        if first_dealer not in (0, 1) or isinstance(first_dealer, bool):  # the first declarer, JJK-2.2
            raise InvalidOptions(f"first_dealer must be seat 0 or 1, got {first_dealer!r}",
                                 option="first_dealer", allowed="0, 1")
        return JapaneseJokerState(self, self.options(options), first_dealer)

    def draw_first_dealer(self, shuffled_pack: Sequence[int] | Sequence[str],
                          options: Options | None = None) -> int:
        """JJK-2.2: the first declarer is uniformly random; the rulebook has no draw.

        Documented procedure: the seat is the parity of the top card's position in the
        game's pack order (``pack.index(top) % 2``). The pack has 36 cards, 18 at even and 18
        at odd positions, so a uniformly shuffled pack gives each seat probability 1/2.
        """
        ids = parse_deck(shuffled_pack, self.pack)
        return self.pack.index(ids[0]) % 2

    def auto_move(self, view: Mapping[str, Any]) -> str:
        """JJK-10.4, a pure function of the acting seat's view.

        Trump: the suit with most normal cards among the three; ties by the highest card held
        in the tied suits, then ``S H D C``; never NT. Card: the legal normal card of lowest
        rank, ties by suit order ``S H D C``; with only jokers legal ``X1`` before ``X2``,
        naming ``S`` when leading.
        """
        legal = list(view["legal"])
        if not legal:
            raise ValueError("auto_move needs the view of the seat to act (its legal actions)")
        if view["phase"] == "trump_choice":
            best = None
            for suit, s in SUIT_INDEX.items():
                ranks = [card_id(c) % 9 for c in view["hand"] if c[0] != "X" and c[1] == suit]
                if not ranks:
                    continue
                key = (-len(ranks), min(ranks), s)
                if best is None or key < best[0]:
                    best = (key, suit)
            # three cards hold a normal one (two jokers, JJK-1.1), and all five trumps are legal (JJK-3.3)
            return f"trump:{best[1]}"
        normal = []
        for a in legal:
            code = a.split(":")[1]
            if code[0] != "X":
                c = card_id(code)
                normal.append((-(c % 9), c // 9, a))
        if normal:
            return min(normal)[2]
        for joker in ("X1", "X2"):
            for a in (f"play:{joker}", f"play:{joker}:S"):
                if a in legal:
                    return a
        # a joker answers naming nothing and leads naming any suit (JJK-5.2): never reached
        raise ValueError(f"no auto-move among the {len(legal)} legal actions")

    def determinize(self, view: Mapping[str, Any], rng: random.Random) -> JapaneseJokerState:
        """A full state drawn uniformly among those consistent with ``view`` (a seat's view)."""
        from .determinize import determinize
        return determinize(self, view, rng)

    def position(self, *, trump: str, hands: Sequence[Sequence[str]],
                 columns: Sequence[Sequence[Sequence[str]]] = ((), ()),
                 played_any: Sequence[bool] = (True, True), to_act: int = 0,
                 lead: tuple[str, str | None] | None = None, declarer: int = 0,
                 tricks_taken: Sequence[int] = (0, 0),
                 options: Mapping[str, Any] | None = None) -> JapaneseJokerState:
        """An explicit mid-deal position, for rule tests, puzzles and analysis.

        ``hands`` per seat, ``columns`` per seat as ``[down, up]`` pairs in table order,
        ``played_any`` per seat (JJK-5.1); ``lead`` = ``(card, named_suit or None)`` already
        played by the other seat when ``to_act`` follows. Cards not placed are out of play
        (zone ``out``). Positions are not checked for reachability (a lone column, which
        JJK-4.4 excludes in play, is allowed: playing it moves its down card); the deal ends
        after its 18th trick counting ``tricks_taken``.
        """
        st = self.new_state(options, first_dealer=declarer)
        st._phase = PLAY
        st._trump = ("S", "H", "D", "C", "NT").index(trump)
        st._tbase = st._trump * 40 * 38
        st._tmask = TRUMP_MASK[st._trump]
        placed: list[int] = []
        for s in (0, 1):
            st._hand[s] = mask_of(card_id(c) for c in hands[s])
            placed += [card_id(c) for c in hands[s]]
            st._open[s] = -1 if played_any[s] else 0
        cols = tuple(tuple((card_id(d), card_id(u)) for d, u in columns[s]) for s in (0, 1))
        for s in (0, 1):
            placed += [c for pair in cols[s] for c in pair]
        st._set_columns(cols)
        st._taken = list(tricks_taken)
        st._ntricks = sum(tricks_taken)
        st._to_act = to_act
        if lead is not None:
            card = card_id(lead[0])
            named = lead[1]
            if (card >= 36) != (named is not None):
                raise ValueError("a lead names a suit if and only if it is a joker (JJK-5.2)")
            action = 38 + 4 * (card - 36) + SUIT_INDEX[named] if named else card
            st._lead = ACTION_LEAD_KEY[action]
            st._lead_card = card
            st._leader = 1 - to_act
            st._open[1 - to_act] = -1
            placed.append(card)
        if len(set(placed)) != len(placed) or not set(placed) <= self.pack_set:
            raise ValueError("a position uses each card of the pack at most once")
        st._out = self.pack_mask & ~mask_of(placed)
        st._origin = (to_act, st._lead)
        return st


GAME = JapaneseJokerGame()
