"""The game API every game implements (ARCHITECTURE.md section 3, after OpenSpiel).

A :class:`Game` (rules + validated table options) makes :class:`State` objects. A state is a
whole *match*, not a single deal: it runs from the first deal to the end of the match, including
thrown-in redeals, dealer rotation and match end.

Two paths, one implementation:

* the **fast path** for playouts and search: ``to_act()``, ``legal_ids()`` (ints),
  ``apply_id(a)`` (no validation: ``a`` must come from ``legal_ids()``), ``clone()``;
* the **API path** for sessions, transcripts and tests: ``legal_actions()`` (notation strings
  of NOTATION.md, in the game's documented order) and ``apply(text, seat)``, which validates
  and raises a specific :class:`~engine_service.rules.errors.RulesError` leaving the state
  unchanged.

Dealing is a **chance step**: when ``to_act() == CHANCE`` the state waits for ``deal(deck)``
with a permutation of the game's pack chosen outside (a CSPRNG in the session layer, a
transcript, a test). The rules never touch randomness, a clock or I/O.

Views are plain JSON-ready dicts. Every game's ``view(seat)`` and ``public_view()`` carry at
least these keys (the service maps them to its protobuf View; anything game-specific lives
under ``"table"``):

``game``, ``phase`` (str), ``deal_number`` (0-based index of the current deal, or of the
upcoming one between deals: the number of deals completed, thrown-in deals included), ``dealer``,
``to_act`` (seat or None), ``seat`` (the viewer, None for a spectator), ``hand`` (the viewer's
cards, ``[]`` for a spectator), ``hand_sizes`` (per seat), ``legal`` (the viewer's legal
actions when it is to act, else ``[]``), ``trick`` (plays of the trick in progress, each
``{"seat", "card", ...}``), ``last_trick`` (the match's most recent complete trick with
``winner``, in one shape per game: the deal's previous complete trick; from the end of a deal
until the next deal's first trick is complete, also between deals and once the match is over,
the final trick of the deal that just ended, so a view whose deal has no complete trick --
``tricks_taken`` all 0 -- shows a previous deal's; None before the match's first trick and
after a thrown-in deal, never an earlier deal's trick; states keep it as an immutable record
shared by clones), ``tricks_taken`` (per seat, this deal), ``totals`` (per seat, the match score as in NOTATION
section 4), ``deal_results`` (results of the deals already scored), ``over``, ``winners``,
``table`` (game-specific public information: trump, turn-up, bids, melds, columns...).
A game's table may hold ``tricks``: the current deal's complete tricks, oldest first, with
``plays`` and ``winner`` (Klaberjass and Jo-Jotte with each trick's card ``points``); the
service sends them as the view's trick history (else it cuts ``table.deal_actions`` into
tricks), and a trick's ``points``, where the game has them, as ``Trick.points``.

``secret_cards(seat)`` is the omniscient answer to "which cards may this seat not know right
now" (``seat=None``: a spectator). It exists for the no-leak tests, the session's log
redaction and determinization; it is never sent to anyone.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Mapping, Sequence

from .cards import codes_of, parse_deck
from .errors import DealRequired, IllegalAction, MalformedAction, MatchOver, NotYourTurn
from .options import Options, OptionSpec, validate_options
from .views import ViewMaker

CHANCE = -1
"""``to_act()`` value: the state waits for a deck (``deal``)."""
TERMINAL = -2
"""``to_act()`` value: the match is over."""


class Game(ABC):
    """A game definition: identity, seat count, pack, table options, state factory."""

    id: ClassVar[str]
    name: ClassVar[str]
    rulebook: ClassVar[str]  # file name in shared/rules
    num_seats: ClassVar[int]
    pack: ClassVar[tuple[int, ...]]
    option_specs: ClassVar[tuple[OptionSpec, ...]]
    description: ClassVar[str] = ""
    #: The public view's table keys that name a seat by the first-dealer draw (the first
    #: dealer, the elder hand...): with the view's ``dealer`` they are withheld while the match
    #: waits for players, so that nobody picks a seat knowing the draw (sessions.views).
    draw_keys: ClassVar[tuple[str, ...]] = ()

    def options(self, raw: Mapping[str, Any] | Options | None = None) -> Options:
        """Validated options with defaults filled in (InvalidOptions on anything unknown).

        A complete set of this game's options comes back as it is; another game's set is
        validated as any mapping would be, so that it is refused as unknown options rather
        than failing later on a missing one."""
        if isinstance(raw, Options):
            if raw.keys() == {spec.name for spec in self.option_specs}:
                return raw
            raw = dict(raw)
        return validate_options(self.option_specs, raw)

    @abstractmethod
    def new_state(self, options: Mapping[str, Any] | Options | None = None, first_dealer: int = 0) -> "State":
        """A new match whose first deal is dealt by ``first_dealer`` (waits for a deck)."""

    @abstractmethod
    def draw_first_dealer(self, shuffled_pack: Sequence[int], options: Options | None = None) -> int:
        """Outcome of the rulebook's draw for the first deal, from a shuffled pack (chance).

        Pure: the session passes a permutation from its CSPRNG; the cards are taken from the
        top in the order the rulebook's procedure draws them.
        """

    @abstractmethod
    def determinize(self, view: Mapping[str, Any], rng: Any) -> "State":
        """A full state consistent with everything ``view`` (a seat's ``view(seat)``) says,
        the unknown cards sampled uniformly among the consistent deals with ``rng`` (a
        ``random.Random``). It reads nothing but the view, so it cannot leak; search bots
        run on its samples. InconsistentView when no state of this game can show that view
        to a seat (a spectator's view, another game's, an edited one)."""

    @abstractmethod
    def auto_move(self, view: Mapping[str, Any]) -> str:
        """The rulebook's deterministic auto-move policy, as a function of a seat's view.

        ``view`` is ``state.view(seat)`` for the seat to act; the answer is one of
        ``view["legal"]`` (NOTATION section 5, GJ-12.2, JJK-10.4).
        """


class State(ABC):
    """One match in progress. Mutable for speed; ``clone()`` is cheap."""

    # Empty, so that a game's state declaring its own ``__slots__`` (all four do) has no
    # per-instance ``__dict__``: search clones states by the thousand.
    __slots__ = ()

    game: Game
    options: Options
    first_dealer: int

    # ---- fast path (implemented by each game) -------------------------------------------

    @abstractmethod
    def to_act(self) -> int:
        """The seat that must act, or CHANCE (a deck is needed) or TERMINAL."""

    @abstractmethod
    def legal_ids(self) -> list[int]:
        """Legal action ids of the seat to act, in the game's documented order: a new list the
        caller owns (search bots filter and shuffle it), which no later call sees changed."""

    @abstractmethod
    def _apply(self, action: int) -> None:
        """Apply a legal action id (no validation)."""

    @abstractmethod
    def _deal(self, deck: tuple[int, ...]) -> None:
        """Deal a validated deck (a permutation of ``game.pack``)."""

    @abstractmethod
    def clone(self) -> "State":
        """An independent copy (used by search; must be cheap)."""

    @abstractmethod
    def action_str(self, action: int) -> str:
        """Notation string of an action id (NOTATION section 2)."""

    def parse_action(self, text: str) -> int:
        """Action id of a notation string; MalformedAction if it is not this game's notation.

        Parsing is independent of legality: a well-formed but illegal action parses. Anything
        but a string is refused here, in every game with the same words naming its type
        (NOTATION sections 1 and 2: an action is one string), before any game looks it up.
        """
        if not isinstance(text, str):
            raise MalformedAction(f"an action is a string, got {type(text).__name__}")
        return self._parse_notation(text)

    @abstractmethod
    def _parse_notation(self, text: str) -> int:
        """Action id of ``text``, a string; MalformedAction if it is not this game's notation."""

    # ---- results and views (implemented by each game) -------------------------------------

    @abstractmethod
    def dealer(self) -> int:
        """Dealer (Japanese Joker: declarer) of the current or upcoming deal."""

    @abstractmethod
    def deal_results(self) -> list[dict[str, Any]]:
        """JSON results of every deal completed so far (NOTATION section 4), in order."""

    @abstractmethod
    def result(self) -> dict[str, Any]:
        """``{"totals": [...], "winners": [...], "over": bool}`` (NOTATION section 3)."""

    @abstractmethod
    def view(self, seat: int) -> dict[str, Any]:
        """What ``seat`` may know now (see module docstring for the common keys)."""

    @abstractmethod
    def public_view(self) -> dict[str, Any]:
        """What a spectator may know now: ``view`` without any hand or legal actions."""

    @abstractmethod
    def view_maker(self) -> ViewMaker:
        """``make(seat)``: ``view(seat)`` (``public_view()`` for None) of the state as it is
        now, for serving several audiences of one state. Every game builds the part its
        audiences share (all but the hand, the legal actions...) once and shares it between
        the views it returns: views are read-only. Valid until the state changes."""

    @abstractmethod
    def secret_cards(self, seat: int | None) -> int:
        """Bitmask of the cards ``seat`` (None: a spectator) may not know now (omniscient)."""

    @abstractmethod
    def zones(self) -> dict[str, int]:
        """Omniscient card locations: zone name -> bitmask (``hand0``, ``stock``, ``won1``,
        ``trick``, ``turn_up``, ...). The zones are disjoint and cover the pack (out of a
        deal: empty dict). For the admin view and the pack-conservation invariant."""

    # ---- shared behaviour ---------------------------------------------------------------

    # ``_history`` (a slot of each game's state, None when new): a cons list
    # (previous, ("deal", deck) | action id)

    def is_over(self) -> bool:
        return self.to_act() == TERMINAL

    def deal(self, deck: Sequence[str] | Sequence[int]) -> None:
        """The chance step: deal ``deck`` (card codes or ids, top card first)."""
        from .errors import InvalidDeck

        who = self.to_act()
        if who == TERMINAL:
            raise MatchOver("the match is over")
        if who != CHANCE:
            raise InvalidDeck("no deal is due: a player must act first")
        ids = parse_deck(deck, self.game.pack)
        self._deal(ids)
        self._history = (self._history, ("deal", ids))

    def apply_id(self, action: int) -> None:
        """Fast path: apply an id taken from ``legal_ids()`` (not validated)."""
        self._apply(action)
        self._history = (self._history, action)

    def legal_actions(self) -> list[str]:
        """Legal actions of the seat to act as notation strings, in the documented order (a new
        list, as :meth:`legal_ids`)."""
        if self.to_act() < 0:
            return []
        s = self.action_str
        return [s(a) for a in self.legal_ids()]

    def apply(self, action: str, seat: int | None = None) -> int:
        """Validate and apply a notation string for ``seat`` (None: the seat to act).

        Raises MatchOver, DealRequired, NotYourTurn, MalformedAction or IllegalAction and then
        leaves the state unchanged. Returns the action id applied.
        """
        who = self.to_act()
        if who == TERMINAL:
            raise MatchOver("the match is over")
        if who == CHANCE:
            raise DealRequired("the next deal has not been dealt yet")
        if seat is not None and seat != who:
            raise NotYourTurn(f"it is seat {who}'s turn, not seat {seat}'s", to_act=who)
        try:
            a = self.parse_action(action)
        except MalformedAction as exc:  # every game's refusal names what was sent, as IllegalAction does
            raise MalformedAction(exc.message, **{**exc.details, "action": str(action)}) from None
        if a not in self.legal_ids():
            raise IllegalAction(self._why_illegal(a, action), action=action)
        self.apply_id(a)
        return a

    def public_action(self, action: int) -> int:
        """The id the public record shows for ``action``, a legal action of the seat to act,
        before it is applied: ``action`` itself, unless the game records it as another action
        of the same effect so that the choice tells the table nothing the rules keep private
        (Klaberjass and Jo-Jotte record a ``declare`` that states nothing as ``conceal``). The
        session publishes and stores this form, never the string the player sent."""
        return action

    def _why_illegal(self, action: int, text: str) -> str:
        """The message of an IllegalAction for ``text`` (id ``action``). Games override it to
        name the rule that forbids the action; the message may use only what the acting seat
        knows (its own hand and public information). This fallback lists the seat's own legal
        actions (which the seat is shown anyway), so a refusal says what would be accepted."""
        return f"{text} is not a legal action now; legal now: {', '.join(self.legal_actions())}"

    def history(self) -> list[Any]:
        """The match so far: ``("deal", deck_ids)`` entries and action ids, in order."""
        items = []
        node = self._history
        while node is not None:
            node, item = node
            items.append(item)
        items.reverse()
        return items

    def hand_codes(self, mask: int) -> list[str]:
        return codes_of(mask)
