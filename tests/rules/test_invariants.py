"""Random-playout invariants, no-leak properties and transcript round trips over every game in
the registry: one parametrized module, not one copy per game.

Per-game knowledge the generic code cannot have (the rulebook's score arithmetic, interesting
option sets) comes from ``tests/rules/checks_<game>.py``:

* ``check_scores(state)``: asserts the match totals obey the rulebook's arithmetic;
* ``OPTION_SETS``: a list of non-default option dicts to play under as well.
"""

from __future__ import annotations

import copy
import importlib
import json
import random
from types import MappingProxyType

import pytest

from engine_service.rules import (CHANCE, TERMINAL, IllegalAction, InconsistentView, InvalidOptions, MalformedAction,
                                  NotYourTurn, RulesError, TranscriptError, all_game_ids, get_game, transcript)
from engine_service.rules.cards import JOKER1, card_code, popcount
from engine_service.rules.options import JSON_SAFE_INT, Options, check_new_options

from .playout import current_deal_cards_in, iter_states, mask_codes, random_match, shuffled

GAMES = all_game_ids()


def checks(game_id: str):
    return importlib.import_module(f"tests.rules.checks_{game_id}")


def option_sets(game_id: str) -> list[dict]:
    return [{}] + list(getattr(checks(game_id), "OPTION_SETS", []))


def snapshot(state) -> str:
    """Everything observable about a state, to prove a rejected action changed nothing.

    The views come from one ``view_maker()`` (what ``view(seat)`` and ``public_view()`` are
    made of in every game: the public part built once), and a seat's view writes out only its
    keys whose value is not the public view's own object (``[value]``; ``0`` for a shared
    one, whose text is the public view's): two equal snapshots still have equal views."""
    n = state.game.num_seats
    make = state.view_maker()
    public = make(None)
    seats = [{k: 0 if k in public and v is public[k] else [v] for k, v in make(s).items()} for s in range(n)]
    return json.dumps([state.to_act(), state.legal_actions(), state.zones(), state.result(),
                       state.deal_results(), public, seats, len(state.history())], sort_keys=True, default=str)


def test_registry_has_the_first_games():
    assert "klaberjass" in GAMES and "jojotte" in GAMES


@pytest.mark.parametrize("game_id", GAMES)
def test_each_game_package_exports_the_registered_game(game_id):
    """A game package's ``GAME`` is the object the registry answers for its id (Jo-Jotte's
    is the value ``register`` returns): the package's rules and the registry's are one game."""
    package = importlib.import_module(f"engine_service.rules.games.{game_id}")
    assert package.GAME is get_game(game_id) and package.GAME.id == game_id


@pytest.mark.parametrize("game_id", GAMES)
def test_a_view_is_for_a_seat_of_the_game_or_a_spectator_only(game_id):
    """``view(seat)`` and ``view_maker()(seat)`` refuse a viewer that is no seat (ValueError),
    in a deal and between deals: the states index hands Python-style, so seat -1 was the last
    seat and ``True`` seat 1, each shown that seat's hand (hidden information, docs/api.md)."""
    game = get_game(game_id)
    state = game.new_state()
    dealt = game.new_state()
    dealt.deal(shuffled(game, random.Random(7)))
    for st in (state, dealt):
        make = st.view_maker()
        for seat in range(game.num_seats):
            assert st.view(seat)["seat"] == make(seat)["seat"] == seat
        assert st.view_maker()(None)["seat"] is None
        for bad in (-1, -game.num_seats, game.num_seats, True, False, 1.0, "0"):
            with pytest.raises(ValueError):  # Klaberjass and Japanese Joker word their own
                st.view(bad)
            with pytest.raises(ValueError, match="a view is for a seat"):
                make(bad)


@pytest.mark.parametrize("game_id", GAMES)
def test_a_new_match_waits_for_a_deck_dealt_by_the_seat_given_seat_0_by_default(game_id):
    """``Game.new_state``'s contract: a new match waits for its first deck (CHANCE) and that deal
    is dealt by ``first_dealer`` (Japanese Joker: its declarer), seat 0 when none is given. The
    session always passes the seat its draw chose (KL-2.1, JJ-2.1, GJ-2.2, JJK-A9); the default
    is what replays, bots and tests without a draw start from."""
    game = get_game(game_id)
    default = game.new_state()
    assert (default.to_act(), default.first_dealer, default.dealer()) == (CHANCE, 0, 0)
    for seat in range(game.num_seats):
        state = game.new_state({}, first_dealer=seat)
        assert (state.to_act(), state.first_dealer, state.dealer()) == (CHANCE, seat, seat)


def test_the_registry_skips_a_game_not_written_yet_but_not_one_that_fails_to_import(tmp_path, monkeypatch):
    """A built-in game module that does not exist is simply absent from the registry; one that
    exists but imports a missing module is an error, never a game quietly left out."""
    from engine_service.rules import registry

    (tmp_path / "extra_games" / "broken").mkdir(parents=True)
    (tmp_path / "extra_games" / "__init__.py").write_text("")
    (tmp_path / "extra_games" / "broken" / "__init__.py").write_text("import no_such_dependency_of_a_game\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_loaded", False)
    monkeypatch.setattr(registry, "BUILTIN_MODULES", ("engine_service.rules.games.not_written_yet",))
    assert sorted(registry.all_game_ids()) == sorted(GAMES)  # the registered games, none added
    monkeypatch.setattr(registry, "_loaded", False)
    monkeypatch.setattr(registry, "BUILTIN_MODULES", ("extra_games.broken",))
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_of_a_game"):
        registry.all_game_ids()


def test_the_registry_imports_and_lists_nothing_after_its_first_use(monkeypatch):
    """The registry loads the games once (registry docstring): later lookups neither import a
    module nor list a package's folder, which would open a file in the middle of a call and fail
    when the service is out of file descriptors."""
    from engine_service.rules import registry

    get_game("jojotte")

    def refuse(*args, **kwargs):
        raise AssertionError("the registry touched the file system after its first use")

    monkeypatch.setattr(registry.importlib, "import_module", refuse)
    monkeypatch.setattr(registry.pkgutil, "iter_modules", refuse)
    assert get_game("jojotte").id == "jojotte" and all_game_ids() == GAMES


@pytest.mark.parametrize("bad", ["no_such_game", "", None, ["klaberjass"], {"game": "jojotte"}])
def test_an_unknown_game_id_of_any_type_is_unknown_game_naming_the_known_ids(bad):
    """``get_game``: "UnknownGame naming the known ids otherwise" (registry docstring; the
    service's ``UNKNOWN_GAME``, docs/api.md): an unhashable id included, never a TypeError,
    the ids in the order they are listed to users."""
    from engine_service.rules import UnknownGame

    with pytest.raises(UnknownGame) as err:
        get_game(bad)
    assert err.value.message == f"unknown game {bad!r}; known games: {', '.join(GAMES)}"
    assert GAMES[:4] == ["klaberjass", "jojotte", "georgian_joker", "japanese_joker"]


def test_an_unknown_game_names_the_id_sent_in_its_details():
    """docs/api.md, the ErrorInfo metadata of each reason: ``UNKNOWN_GAME`` carries ``game``
    (what you sent); the transport copies a rules error's details into that metadata."""
    from engine_service.rules import UnknownGame

    with pytest.raises(UnknownGame) as err:
        get_game("poker")
    assert err.value.details == {"game": "poker"}


def test_the_games_are_listed_in_the_built_in_order_whatever_order_they_registered_in(monkeypatch):
    """``BUILTIN_MODULES`` is "the order they are listed to users" (rules/registry.py): a game
    package imported before the registry's first use (by a bot, a test, a tool) registers
    first, and must not move ahead in ``all_game_ids`` nor ``all_games`` (ListGames)."""
    from engine_service.rules import registry

    builtin = [m.rsplit(".", 1)[1] for m in registry.BUILTIN_MODULES]
    registry.all_game_ids()  # every built-in game registered
    monkeypatch.setattr(registry, "_GAMES", {g: registry._GAMES[g] for g in reversed(builtin)})
    assert registry.all_game_ids() == builtin
    assert [g.id for g in registry.all_games()] == builtin


def test_the_registry_loads_every_module_of_the_games_at_once():
    """In a fresh interpreter, the registry's first use imports each game's package whole: a
    module its code imports inside a function (views, determinization) is not left to be
    opened in the middle of a call, which fails when the service is out of file descriptors."""
    import subprocess
    import sys
    from pathlib import Path

    import engine_service.rules.games as games

    root = Path(games.__file__).parent
    expected = sorted(f"engine_service.rules.games.{p.parent.name}.{p.stem}"
                      for p in root.glob("*/*.py") if p.stem != "__init__")
    assert len(expected) >= 4 * 5
    code = ("import sys; from engine_service.rules import get_game; get_game('klaberjass'); "
            "print('\\n'.join(sorted(m for m in sys.modules if m.count('.') == 4 "
            "and m.startswith('engine_service.rules.games.'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(games.__file__).parents[3]).stdout.split()
    assert out == expected


@pytest.mark.parametrize("game_id", GAMES)
def test_equal_option_sets_are_one_shared_immutable_object(game_id):
    """Every open match keeps its options (and a game's compiled form of them) for its whole
    life, so equal sets are shared (rules/options.py): one object however they were spelled,
    a different set another one, and matches that share it play exactly as unshared ones."""
    game = get_game(game_id)
    defaults = game.options()
    assert game.options({}) is defaults and game.options(None) is defaults
    spelled_out = {s.name: s.default for s in game.option_specs}
    assert game.options(spelled_out) is defaults and defaults.non_default() == {}
    for other in option_sets(game_id)[1:]:
        opts = game.options(other)
        assert opts is game.options(dict(other)) and opts is not defaults
        assert opts.non_default() == other
    with pytest.raises(TypeError):
        defaults._values["x"] = 1  # type: ignore[index]
    # states of one option set share it; they play exactly as a state with a private copy
    unshared = Options(MappingProxyType(dict(defaults)), MappingProxyType(dict(defaults._defaults)))
    for seed in (3, 11):
        shared = random_match(game, seed, {})
        assert shared.options is defaults
        private = random_match(game, seed, unshared)
        assert private.options is unshared
        assert transcript.export(shared) == transcript.export(private)


def test_shared_option_sets_and_their_compiled_forms_are_few_and_made_once():
    """rules/options.py: a game's compiled form of an option set is made once and shared by
    every state at those options (``compiled``), and the two caches start again past
    ``_SHARED_LIMIT`` entries, so that a stream of distinct sets (every ``kl_target_score``
    a table may choose, KL-11) does not grow them without end."""
    from engine_service.rules import options as opts_module

    opts_module._INTERNED.clear()  # a fresh start, as past the limit: room for what follows
    opts_module._COMPILED.clear()
    game = get_game("klaberjass")
    made: list[Options] = []

    def factory(options: Options) -> object:
        made.append(options)
        return object()

    first = game.options({"kl_target_score": 1})
    form = opts_module.compiled(first, factory)
    assert opts_module.compiled(first, factory) is form and made == [first]
    second = game.options({"kl_target_score": 2})
    opts_module.compiled(second, factory)
    assert game.options({"kl_target_score": 1}) is first and opts_module.compiled(first, factory) is form
    assert made == [first, second]
    for target in range(2, 2 * opts_module._SHARED_LIMIT + 2):
        opts_module.compiled(game.options({"kl_target_score": target}), factory)
        assert len(opts_module._INTERNED) <= opts_module._SHARED_LIMIT
        assert len(opts_module._COMPILED) <= opts_module._SHARED_LIMIT


@pytest.mark.parametrize("game_id", GAMES)
def test_int_options_of_new_matches_stay_json_safe(game_id):
    """An int option with an open range ("any positive integer": kl_target_score,
    jj_game_target, jj_match_rubbers) takes at most 2^53 - 1 in a new match
    (rules/options.py JSON_SAFE_INT, check_new_options): its value travels as a JSON number and
    as a double in View.table, exact only so far, and docs/api.md lets clients read the API's
    64-bit integers as JavaScript numbers. Above it, InvalidOptions names the bound; at it, the
    value is kept exactly; a stored match or a transcript with a larger value still loads."""
    game = get_game(game_id)
    for spec in game.option_specs:
        if spec.kind != "int" or spec.values:
            continue
        top = spec.maximum if spec.maximum is not None else JSON_SAFE_INT
        check_new_options(game.option_specs, {spec.name: top})
        assert game.options({spec.name: top})[spec.name] == top
        with pytest.raises(InvalidOptions) as info:
            check_new_options(game.option_specs, {spec.name: top + 1})
        assert str(top) in info.value.details["allowed"]
        if spec.maximum is None:  # written before the bound: read as it was
            assert game.options({spec.name: 2**63 - 1})[spec.name] == 2**63 - 1


def test_each_factory_has_its_own_compiled_form_of_an_option_set():
    """``compiled(options, factory)`` is ``factory(options)``, made once per option set *and*
    factory: a second factory on the same set gets its own form, not the first one's."""
    from engine_service.rules import options as opts_module

    opts = get_game("klaberjass").options({"kl_target_score": 7})

    def one(options: Options) -> tuple:
        return ("one", options["kl_target_score"])

    def other(options: Options) -> tuple:
        return ("other", options["kl_target_score"])

    assert opts_module.compiled(opts, one) == ("one", 7)
    assert opts_module.compiled(opts, other) == ("other", 7)
    assert opts_module.compiled(opts, one) == ("one", 7)


def test_every_int_option_of_a_new_match_is_checked_not_only_the_first():
    """check_new_options checks each option a new match asks for: in Jo-Jotte a JSON-safe
    ``jj_game_target`` (JJ-10.1) given first does not let a ``jj_match_rubbers`` (JJ-10.5)
    beyond 2^53 - 1 through; InvalidOptions names the one at fault."""
    game = get_game("jojotte")
    check_new_options(game.option_specs, {"jj_game_target": 100, "jj_match_rubbers": JSON_SAFE_INT})
    with pytest.raises(InvalidOptions) as info:
        check_new_options(game.option_specs, {"jj_game_target": 100, "jj_match_rubbers": JSON_SAFE_INT + 1})
    assert info.value.details["option"] == "jj_match_rubbers"


def test_equal_option_sets_of_different_games_are_shared_per_game():
    """validate_options shares one Options per set of values *of the same specs*: two games
    whose option values happen to be equal (a server holds every game's matches, made in any
    order) each keep their own shared set, neither evicting the other's."""
    from engine_service.rules.options import INT, OptionSpec, validate_options

    first_specs = (OptionSpec("turns", INT, 1, minimum=1),)
    second_specs = (OptionSpec("turns", INT, 1, minimum=1),)
    first = validate_options(first_specs, {})
    second = validate_options(second_specs, {})
    assert second is not first
    assert validate_options(first_specs, {}) is first
    assert validate_options(second_specs, {"turns": 1}) is second


def test_an_unbounded_int_option_of_a_new_match_stops_exactly_at_the_json_safe_bound():
    """options.OptionSpec.check_new: an integer option with no bound of its own accepts
    -JSON_SAFE_INT .. JSON_SAFE_INT inclusive for a new match and refuses one past either end;
    a bool option's refusal lists ``true, false`` as the allowed values."""
    from engine_service.rules.options import BOOL, INT, OptionSpec

    spec = OptionSpec("any_int", INT, 0)
    # the bound is JavaScript's Number.MAX_SAFE_INTEGER, 2^53 - 1 (docs/api.md: the API's
    # integers fit a JavaScript number), written out here, not read from the module
    safe = 9_007_199_254_740_991
    assert spec.check_new(safe) == safe and spec.check_new(-safe) == -safe
    for bad in (safe + 1, -safe - 1):
        with pytest.raises(InvalidOptions):
            spec.check_new(bad)
    with pytest.raises(InvalidOptions) as info:
        OptionSpec("a_flag", BOOL, False).check("yes")
    assert info.value.details["allowed"] == "true, false"
    # the refused value as JSON writes it (the rulebooks' and NOTATION.md's JSON types): a
    # bool given to an int option is ``true``, not Python's ``True``; a string is quoted
    with pytest.raises(InvalidOptions) as info:
        spec.check(True)
    assert str(info.value) == f"option 'any_int': invalid value true; allowed: an integer from -{safe} to {safe}"
    with pytest.raises(InvalidOptions) as info:
        OptionSpec("a_count", INT, 0, maximum=10).check("3")
    assert str(info.value) == "option 'a_count': invalid value \"3\"; allowed: an integer <= 10"
    assert OptionSpec("a_count", INT, 1, minimum=1, maximum=10).allowed_text() == "an integer in [1, 10]"
    assert OptionSpec("a_count", INT, 1, minimum=1).allowed_text() == f"an integer >= 1 (at most {safe})"
    with pytest.raises(InvalidOptions) as info:
        OptionSpec("a_flag", BOOL, False).check(0)
    assert str(info.value) == "option 'a_flag': invalid value 0; allowed: true, false"


@pytest.mark.parametrize("game_id", GAMES)
def test_structural_invariants(game_id):
    """Exactly one seat to act until the end; at least one legal action; every legal action
    applies; the pack is conserved at every step; no duplicates in legal lists."""
    game = get_game(game_id)
    pack_mask = sum(1 << c for c in game.pack)
    for opts in option_sets(game_id):
        for seed in range(12):
            for state in iter_states(game, 1000 + seed, opts):
                who = state.to_act()
                assert 0 <= who < game.num_seats
                legal = state.legal_ids()
                assert legal, f"no legal action for seat {who}"
                strings = state.legal_actions()
                assert len(set(strings)) == len(strings), strings
                for a, s in zip(legal, strings):
                    assert state.parse_action(s) == a
                zones = state.zones()
                total = 0
                for name, mask in zones.items():
                    assert total & mask == 0, f"zone {name} overlaps another"
                    total |= mask
                assert total == pack_mask, "pack not conserved"
                for a in legal:
                    c = state.clone()
                    c.apply_id(a)
                    assert c.to_act() in (CHANCE, TERMINAL) or 0 <= c.to_act() < game.num_seats


#: docs/api.md, View `hand`: "in card order": suits S H D C, each from the ace down, jokers last.
CARD_ORDER = [r + s for s in "SHDC" for r in "AKQJT9876"] + ["X1", "X2"]


@pytest.mark.parametrize("game_id", GAMES)
def test_every_hand_in_a_view_is_in_card_order(game_id):
    """docs/api.md: a view's ``hand`` lists its cards in card order (suits S H D C, each from
    the ace down, the jokers last), whatever order they were dealt or drawn in, for every game
    and every seat, so that a client can show it as it comes."""
    game = get_game(game_id)
    hands = 0
    for seed in range(4):
        for state in iter_states(game, 5100 + seed):
            for seat in range(game.num_seats):
                hand = state.view(seat)["hand"]
                assert hand == sorted(hand, key=CARD_ORDER.index), (seat, hand)
                hands += len(hand) > 1
    assert hands > 100


def _play_on(state, rng: random.Random, steps: int) -> None:
    """Random legal actions (and random decks) for up to ``steps`` steps."""
    for _ in range(steps):
        who = state.to_act()
        if who == TERMINAL:
            return
        if who == CHANCE:
            state.deal(shuffled(state.game, rng))
        else:
            state.apply_id(rng.choice(state.legal_ids()))


@pytest.mark.parametrize("game_id", GAMES)
def test_a_clone_plays_on_like_the_original_and_leaves_it_alone(game_id):
    """``clone`` (what search bots and sessions copy a match with) copies every part of the
    state and shares nothing that changes. Before each step of a match, a throwaway clone is
    played on at random (a different future) and the next step is then taken on a fresh clone
    of the match: the match must stay indistinguishable from one that was never cloned. A
    field that ``clone`` forgets or shares (the deck of the second deal, the bella
    bookkeeping) shows up only later in the deal, so the comparison runs over whole deals; a
    field only the views read in the middle of a trick (Japanese Joker's trick leader) shows
    only on the fresh clone itself, so it is compared before its step too."""
    game = get_game(game_id)
    for opts in option_sets(game_id):
        rng = random.Random(31)
        scratch_rng = random.Random(32)
        first = rng.randrange(game.num_seats)
        plain = game.new_state(opts, first_dealer=first)
        cloned = game.new_state(opts, first_dealer=first)
        for _ in range(400):
            who = plain.to_act()
            if who == TERMINAL:
                break
            if who == CHANCE:
                deck = shuffled(game, rng)
                plain.deal(deck)
                cloned.deal(deck)
                continue
            a = rng.choice(plain.legal_ids())
            _play_on(cloned.clone(), scratch_rng, 60)
            cloned = cloned.clone()
            assert snapshot(cloned) == snapshot(plain)
            assert cloned.options == plain.options  # what transcript.export writes (NOTATION 3)
            cloned.apply_id(a)
            plain.apply_id(a)
            assert snapshot(cloned) == snapshot(plain)


@pytest.mark.parametrize("game_id", GAMES)
def test_the_legal_lists_belong_to_the_caller(game_id):
    """``legal_ids()`` and ``legal_actions()`` answer a new list each call (game.py): a caller
    that filters or empties its list (a search bot pruning moves) changes neither the state's
    next answer nor what it accepts. Checked at every decision of random matches, each list
    emptied, then a stranger's id appended, before the state is asked again and played on."""
    game = get_game(game_id)
    for seed in range(2):
        for state in iter_states(game, 4100 + seed):
            ids, actions = state.legal_ids(), state.legal_actions()
            expected_ids, expected_actions = list(ids), list(actions)
            ids.clear()
            actions.clear()
            ids.append(-1)
            actions.append("hello")
            assert state.legal_ids() == expected_ids
            assert state.legal_actions() == expected_actions


@pytest.mark.parametrize("game_id", GAMES)
def test_a_state_is_fully_slotted(game_id):
    """Every class of a game's state declares ``__slots__`` (the base ``State`` an empty one),
    so no state carries a per-instance ``__dict__``: search clones states by the thousand, and a
    misspelt attribute assignment fails at once instead of adding a field ``clone`` never copies."""
    state = get_game(game_id).new_state()
    assert not hasattr(state, "__dict__")
    assert all("__slots__" in vars(cls) for cls in type(state).__mro__[:-1])
    with pytest.raises(AttributeError):
        state.not_a_field = 1
    assert state._history is None and state.history() == []


@pytest.mark.parametrize("game_id", GAMES)
def test_illegal_actions_raise_and_change_nothing(game_id):
    game = get_game(game_id)
    rng = random.Random(7)
    vocabulary: set[str] = {"", "play", "play:", "PLAY:AS", "pass:", "bid:-1", "bid:x", "play:ZZ",
                            "play:AS:", "trump:XX", "name:NT", "hello", "play:AS:high:S:extra"}
    for seed in range(6):
        for i, state in enumerate(iter_states(game, 2000 + seed)):
            legal = set(state.legal_actions())
            vocabulary |= legal
            if i % 3:
                continue
            before = snapshot(state)
            for bad in rng.sample(sorted(vocabulary - legal), min(12, len(vocabulary - legal))):
                with pytest.raises(RulesError) as info:
                    state.apply(bad)
                assert isinstance(info.value, (MalformedAction, IllegalAction)), bad
                assert snapshot(state) == before, f"rejected {bad!r} changed the state"
            other = (state.to_act() + 1) % game.num_seats
            with pytest.raises(NotYourTurn):
                state.apply(next(iter(legal)), seat=other)
            assert snapshot(state) == before


@pytest.mark.parametrize("game_id", GAMES)
@pytest.mark.parametrize("bad", [None, 5, True, 1.5, ["pass"], ("pass",), b"pass", {"pass": 1}])
def test_a_non_string_action_is_malformed_in_every_game_and_named_by_its_type(game_id, bad):
    """NOTATION.md sections 1 and 2: an action is one string. Anything else is refused as
    MalformedAction by the rules core before any game looks it up, with the same words in
    every game (Klaberjass and Jo-Jotte said "not a klaberjass action: 5", the Joker games
    "an action is a string, got int"), naming what was sent, and changes nothing."""
    for i, state in enumerate(iter_states(get_game(game_id), 41)):
        if i > 12:
            break
        if state.to_act() < 0:
            continue
        before = snapshot(state)
        with pytest.raises(MalformedAction, match=f"^an action is a string, got {type(bad).__name__}$"):
            state.parse_action(bad)
        with pytest.raises(MalformedAction) as info:
            state.apply(bad)
        assert info.value.message == f"an action is a string, got {type(bad).__name__}"
        assert info.value.details["action"] == str(bad)
        assert snapshot(state) == before


@pytest.mark.parametrize("game_id", GAMES)
def test_apply_answers_the_id_of_the_action_it_applied(game_id):
    """NOTATION 2: ``apply(text)`` answers the id of the action it applied (the session writes
    that id's public form to the log): the id ``text`` parses to, whose notation is ``text``,
    and the last entry of the state's history."""
    game = get_game(game_id)
    rng = random.Random(11)
    for i, state in enumerate(iter_states(game, 31)):
        if i % 7 or i > 400:
            continue
        text = rng.choice(state.legal_actions())
        copy_ = state.clone()
        applied = copy_.apply(text)
        assert isinstance(applied, int) and applied == state.parse_action(text)
        assert state.action_str(applied) == text and copy_.history()[-1] == applied


@pytest.mark.parametrize("game_id", GAMES)
def test_an_action_or_deck_out_of_turn_is_refused_saying_what_is_due(game_id):
    """NOTATION 3 (a deal's deck, then its steps, each by its seat): an action while the next
    deal waits for its deck is DealRequired, a deck while a player must act is InvalidDeck, an
    action of another seat than the one to act is NotYourTurn naming the seat to act, and either
    once the match has ended is MatchOver, each saying so (the message reaches the client)."""
    from engine_service.rules import DealRequired, InvalidDeck, MatchOver
    game = get_game(game_id)
    state = game.new_state({}, first_dealer=0)
    with pytest.raises(DealRequired, match="^the next deal has not been dealt yet$"):
        state.apply("pass")
    state.deal(list(game.pack))
    with pytest.raises(InvalidDeck, match="^no deal is due: a player must act first$"):
        state.deal(list(game.pack))
    who = state.to_act()
    other = (who + 1) % game.num_seats
    with pytest.raises(NotYourTurn, match=f"^it is seat {who}'s turn, not seat {other}'s$") as err:
        state.apply(state.legal_actions()[0], seat=other)
    assert err.value.details == {"to_act": who}
    over = random_match(game, 3)
    assert over.to_act() == TERMINAL
    with pytest.raises(MatchOver, match="^the match is over$"):
        over.apply("pass")
    with pytest.raises(MatchOver, match="^the match is over$"):
        over.deal(list(game.pack))


@pytest.mark.parametrize("game_id", GAMES)
def test_every_action_id_with_a_notation_parses_back_to_itself(game_id):
    """NOTATION 2: ``action_str`` and ``parse_action`` are inverse on every id that names an
    action, and an id that names none has no notation (MalformedAction), never a string the
    parser then refuses: Georgian Joker's ``action_str`` wrote ``play:6S`` and ``play:6C``
    for the two cards its pack leaves out (GJ-1.1), which ``parse_action`` refuses."""
    state = get_game(game_id).new_state()
    named = 0
    for action in range(3000):
        try:
            text = state.action_str(action)
        except MalformedAction:
            continue
        named += 1
        assert state.parse_action(text) == action, (action, text)
    assert named > 30


@pytest.mark.parametrize("game_id", GAMES)
def test_an_action_id_outside_the_game_has_no_notation(game_id):
    """``action_str`` of an id that names no action is MalformedAction in every game (the
    Game interface's contract). Klaberjass's read its table with ``-1`` as Python does, and
    named the table's last action instead."""
    for i, state in enumerate(iter_states(get_game(game_id), 31)):
        if i > 60:
            break
        if state.to_act() < 0:  # CHANCE or TERMINAL: no ids to name
            continue
        for bad in (-1, -2, 10**9, "1", None, 1.5):
            with pytest.raises(MalformedAction):
                state.action_str(bad)
        for action in state.legal_ids():
            assert state.parse_action(state.action_str(action)) == action


@pytest.mark.parametrize("game_id", GAMES)
def test_whole_matches_end_and_scores_add_up(game_id):
    """At least a hundred whole matches per game, under the defaults and option sets."""
    game = get_game(game_id)
    sets = option_sets(game_id)
    for seed in range(100 + 10 * len(sets)):
        opts = sets[seed % len(sets)]
        state = random_match(game, seed, opts)
        res = state.result()
        assert res["over"] is True
        assert res["winners"], "a finished match has winners"
        totals = res["totals"]
        if isinstance(totals, dict):  # NOTATION section 4: Jo-Jotte's totals are per-seat lists by line
            assert totals and all(len(v) == game.num_seats for v in totals.values()), totals
        else:
            assert len(totals) == game.num_seats
        assert state.legal_actions() == []
        checks(game_id).check_scores(state)


@pytest.mark.parametrize("game_id", GAMES)
def test_no_view_leaks_a_secret_card(game_id):
    """No view(seat) ever holds a card the seat may not know; public_view holds no private card;
    a seat's secrets include every card in another seat's hand not revealed to it."""
    game = get_game(game_id)
    # Four-seat matches are 24 deals long: check every third decision (a rotating offset, so
    # every kind of decision is still visited) to keep the suite's time in bounds.
    stride = 1 if game.num_seats == 2 else 3
    for opts in option_sets(game_id):
        for seed in range(8):
            for i, state in enumerate(iter_states(game, 3000 + seed, opts)):
                if i % stride != seed % stride:
                    continue
                zones = state.zones()
                secrets = [state.secret_cards(seat) for seat in range(game.num_seats)]
                for seat, secret in enumerate(secrets):
                    v = state.view(seat)
                    leaked = current_deal_cards_in(v) & {c for c in range(38) if secret >> c & 1}
                    assert not leaked, f"seat {seat} view leaks {mask_codes(sum(1 << c for c in leaked))}"
                    own = zones.get(f"hand{seat}", 0)
                    assert secret & own == 0, "a seat's own hand is never secret to it"
                    assert sorted(v["hand"]) == sorted(mask_codes(own)), "view hand is the seat's hand"
                pub_secret = state.secret_cards(None)
                public = state.public_view()
                leaked = current_deal_cards_in(public) & {c for c in range(38) if pub_secret >> c & 1}
                assert not leaked, f"public view leaks {mask_codes(sum(1 << c for c in leaked))}"
                assert public["hand"] == []
                for secret in secrets:
                    assert secret & ~pub_secret == 0, "spectators know less than seats"
                stock = zones.get("stock", 0)
                assert pub_secret & stock == stock, "the stock is never public"


@pytest.mark.parametrize("game_id", GAMES)
def test_transcript_round_trip(game_id, tmp_path):
    game = get_game(game_id)
    for seed in range(5):
        finished = random_match(game, 4000 + seed, option_sets(game_id)[seed % len(option_sets(game_id))])
        data = transcript.export(finished)
        # written and read as a file is (NOTATION.md section 3: schema, shape), then replayed
        diff, state = transcript.check(transcript.loads(transcript.dumps(data)))
        assert diff is None, str(diff)
        assert state.result() == finished.result()

    # an unfinished match exports and checks out too
    rng = random.Random(5)
    state = game.new_state({}, first_dealer=0)
    for _ in range(60):
        if state.to_act() == CHANCE:
            state.deal(shuffled(game, rng))
        else:
            state.apply_id(rng.choice(state.legal_ids()))
    data = transcript.export(state)
    assert transcript.check(data)[0] is None

    base = transcript.export(random_match(game, 4100))
    # one changed legal set
    bad = copy.deepcopy(base)
    step = bad["deals"][0]["steps"][3]
    step["legal"] = step["legal"] + ["pass:never"]
    diff, _ = transcript.check(bad)
    assert diff is not None and diff.where == "deal 0 step 3" and diff.what == "legal"
    # one changed action (to another legal one when there is one, else an illegal one)
    bad = copy.deepcopy(base)
    for i, st in enumerate(bad["deals"][0]["steps"]):
        if len(st["legal"]) > 1:
            st["action"] = next(a for a in st["legal"] if a != st["action"])
            break
    diff, _ = transcript.check(bad)
    assert diff is not None and diff.where.startswith("deal 0")
    # one changed deal result
    bad = copy.deepcopy(base)
    deal = next(d for d in bad["deals"] if "result" in d and not d["result"].get("thrown_in"))
    key = next(k for k, v in deal["result"].items() if isinstance(v, list))
    deal["result"][key] = list(deal["result"][key])[::-1] + [0]
    diff, _ = transcript.check(bad)
    assert diff is not None and diff.what == f"result.{key}"
    # the match result
    bad = copy.deepcopy(base)
    bad["result"]["over"] = False
    diff, _ = transcript.check(bad)
    assert diff is not None and diff.where == "match result"
    # legal sets compare as sets (NOTATION.md): order and repeats do not matter
    same = copy.deepcopy(base)
    step = same["deals"][0]["steps"][3]
    step["legal"] = step["legal"][::-1] + step["legal"][:1]
    assert transcript.check(same)[0] is None
    # a first dealer that is no seat is a setup difference, never an exception
    for fd in (game.num_seats, -1, True):
        bad = copy.deepcopy(base)
        bad["first_dealer"] = fd
        diff, _ = transcript.check(bad)
        assert diff is not None and (diff.where, diff.what) == ("transcript", "setup"), (fd, diff)


@pytest.mark.parametrize("game_id", GAMES)
def test_auto_move_is_legal(game_id):
    game = get_game(game_id)
    for state in iter_states(game, 5000):
        seat = state.to_act()
        move = game.auto_move(state.view(seat))
        assert move in state.legal_actions()


@pytest.mark.parametrize("game_id", GAMES)
def test_bad_decks_are_rejected(game_id):
    game = get_game(game_id)
    state = game.new_state({}, first_dealer=0)
    before = snapshot(state)
    deck = [c for c in game.pack]
    from engine_service.rules import InvalidDeck
    n = len(deck)
    first = card_code(deck[0])
    for bad, why in ((deck[:-1], f"has {n} cards, got {n - 1}"), (deck[:-1] + deck[:1], f"card {first} appears twice"),
                     (deck + deck[:1], f"has {n} cards, got {n + 1}"), (["ZZ"] + deck[1:], "not a card code: 'ZZ'"),
                     ("AS KS", "a deck must be a list"), ([None] * n, "not a card code: None"),
                     ([99] + deck[1:], "not a card id: 99")):
        with pytest.raises(InvalidDeck) as err:  # the message names the fault (cards.parse_deck)
            state.deal(bad)
        assert why in str(err.value), (bad, str(err.value))
        assert snapshot(state) == before
    assert popcount(sum(1 << c for c in deck)) == len(game.pack)


@pytest.mark.parametrize("game_id", GAMES)
def test_a_deck_at_the_edges_of_the_card_ids_is_rejected_naming_the_fault(game_id):
    """NOTATION 3: a deck is every card of the game's pack, each a card code (or its id). The
    ids next to the range (-1, and 38 = one past X2), a bool (an int to Python, not a card), an
    unhashable entry, a card no pack of this game holds (6S: KL-1.1 and JJ-1.1 have no sixes,
    GJ-1.1 and JJK-1.1 replace it by a joker), a joker in a game without them (KL-1.1, JJ-1.1:
    32 cards, no joker) and a deck that is not a list but an iterator or bytes are
    each refused as InvalidDeck naming the fault, never dealt nor failing inside the engine."""
    from engine_service.rules import InvalidDeck
    game = get_game(game_id)
    state = game.new_state({}, first_dealer=0)
    before = snapshot(state)
    deck = list(game.pack)
    for bad, why in (([-1] + deck[1:], "not a card id: -1"), ([38] + deck[1:], "not a card id: 38"),
                     ([True] + deck[1:], "not a card: True"), ([["AS"]] + deck[1:], "not a card code: ['AS']"),
                     (deck[:-1] + ["6S"], "card 6S is not in this game's pack"),
                     *([] if JOKER1 in game.pack else [(deck[:-1] + ["X1"], "card X1 is not in this game's pack")]),
                     (iter(deck), "a deck must be a list"), (b"AS KS", "a deck must be a list")):
        with pytest.raises(InvalidDeck) as err:
            state.deal(bad)
        assert why in str(err.value), (bad, str(err.value))
        assert snapshot(state) == before


@pytest.mark.parametrize("game_id", GAMES)
def test_a_deck_of_card_ids_deals_as_the_same_deck_of_codes(game_id):
    """NOTATION 3 (``State.deal`` takes card codes or ids): the pack in id order, which starts
    with id 0 (AS) and ends with the pack's highest id, deals exactly as the same deck written
    as codes: the same hands, the same seat to act and the same legal actions."""
    game = get_game(game_id)
    by_ids, by_codes = game.new_state({}, first_dealer=0), game.new_state({}, first_dealer=0)
    deck = list(game.pack)
    assert deck[0] == 0
    by_ids.deal(deck)
    by_codes.deal([card_code(c) for c in deck])
    assert by_ids.to_act() >= 0
    assert snapshot(by_ids) == snapshot(by_codes)
    assert by_ids.history() == by_codes.history() == [("deal", tuple(deck))]


def test_card_codes_ids_and_strains_round_trip():
    """rules/cards.py: every card code of the rulebooks (rank + suit, jokers X1 X2; KL-1.1,
    GJ-1.1) is one id and back, and the strains ``S H D C NT`` are 0..4 in the rulebooks'
    suit order (JJK-3.3: the trump is S, H, D, C or NT, the fifth strain, cards.NO_TRUMP)."""
    from engine_service.rules.cards import CODES, NO_TRUMP, STRAINS, card_id, strain_index

    assert [card_id(card_code(c)) for c in range(38)] == list(range(38))
    assert len(set(CODES)) == 38 and card_code(36) == "X1" and card_code(37) == "X2"
    assert [strain_index(s) for s in STRAINS] == [0, 1, 2, 3, 4]
    assert strain_index("NT") == NO_TRUMP == 4
    for bad in ("N", "", "s", "SH"):
        with pytest.raises(MalformedAction, match="not a suit or NT"):
            strain_index(bad)


COMMON_VIEW_KEYS = {"game", "phase", "deal_number", "dealer", "to_act", "seat", "hand", "hand_sizes",
                    "legal", "trick", "last_trick", "tricks_taken", "totals", "deal_results", "over",
                    "winners", "table"}


@pytest.mark.parametrize("game_id", GAMES)
def test_views_carry_the_common_keys(game_id):
    """The keys game.py promises to the service, with one meaning in every game: deal_number
    is the number of deals completed; only the seat to act sees legal actions, and exactly
    its legal actions."""
    game = get_game(game_id)
    for state in iter_states(game, 6000):
        who = state.to_act()
        pub = state.public_view()
        assert COMMON_VIEW_KEYS <= set(pub)
        assert pub["deal_number"] == len(state.deal_results())
        assert pub["to_act"] == who and pub["seat"] is None and pub["legal"] == []
        assert pub["game"] == game_id and len(pub["tricks_taken"]) == game.num_seats
        for seat in range(game.num_seats):
            v = state.view(seat)
            assert COMMON_VIEW_KEYS <= set(v) and v["seat"] == seat
            assert v["legal"] == (state.legal_actions() if seat == who else [])


@pytest.mark.parametrize("game_id", GAMES)
def test_view_maker_gives_each_audience_exactly_its_view(game_id):
    """``view_maker()`` (the session layer's way to serve several audiences of one state, the
    public part built once) gives exactly ``view(seat)`` and ``public_view()``, key order
    included, under every option set; a seat's own records (hand, legal actions, Jo-Jotte's
    exchange offer) never reach another audience's view through what they share."""
    game = get_game(game_id)
    for options in option_sets(game_id):
        for state in iter_states(game, 6100, options):
            make = state.view_maker()
            views = [make(seat) for seat in range(game.num_seats)]
            public = make(None)
            assert json.dumps(public) == json.dumps(state.public_view())
            for seat, v in enumerate(views):
                assert json.dumps(v) == json.dumps(state.view(seat)), (seat, state.to_act())
            for seat in range(game.num_seats):  # built in any order, again: the same views
                assert make(seat) == views[seat]
            secret = {s: state.secret_cards(s) for s in range(game.num_seats)}
            for seat, v in enumerate(views):
                hidden = {c for c in range(38) if secret[seat] >> c & 1}
                named = current_deal_cards_in(v)
                assert not named & hidden, (seat, mask_codes(sum(1 << c for c in named & hidden)))


def test_a_sample_agrees_with_a_view_on_everything_the_view_says_and_nothing_more():
    """``views.view_agrees``, the Klaberjass and Jo-Jotte determinizers' test of a sampled
    state against the view it must reproduce (``Game.determinize``: a state consistent with
    everything the view says; docs/bots.md, search bots sample on it): a field the view carries
    must be in the sample with the same shape and value, down to each list element (a dict is
    no None, a string no list, a shorter or longer list no match); a field the view lacks (a
    view rebuilt from the wire has no trick points) constrains nothing, and a tuple stands for
    the list of the same elements."""
    from engine_service.rules.views import view_agrees
    trick = {"plays": [{"seat": 0, "card": "AS"}, {"seat": 1, "card": "7S"}], "winner": 0}
    sample = {"hand": ["KS", "QH"], "last_trick": {**trick, "points": 11}, "to_act": 1, "over": False}
    assert view_agrees(sample, {"last_trick": trick, "to_act": 1})
    assert view_agrees(sample, {"hand": ("KS", "QH"), "over": False}) and view_agrees(sample, {})
    for wrong in ({"to_act": 0}, {"over": None}, {"hand": ["KS"]}, {"hand": ["KS", "QH", "JD"]},
                  {"hand": ["QH", "KS"]}, {"seat": 1}, {"last_trick": {**trick, "winner": 1}},
                  {"last_trick": {"plays": [{"seat": 0, "card": "KS"}, {"seat": 1, "card": "7S"}]}},
                  {"to_act": {}}, {"last_trick": []}, {"hand": {}}):
        assert not view_agrees(sample, wrong), wrong
    assert not view_agrees(None, {}) and not view_agrees([], {}) and not view_agrees("KS", ["K", "S"])
    assert view_agrees(None, None) and not view_agrees(0, None) and not view_agrees({}, [])


def test_a_seats_view_outside_a_deal_has_the_public_views_empty_hand_and_legal_list():
    """``views.with_seat`` with no hand or legal actions (None: no deal in play, the table
    waits for its deck) keeps the public view's empty lists: a seat's view then names its seat
    and shows an empty hand and no legal action, never None (docs/api.md, views)."""
    from engine_service.rules import all_game_ids, get_game

    for game_id in all_game_ids():
        state = get_game(game_id).new_state(first_dealer=1)
        for seat in range(state.game.num_seats):
            for view in (state.view(seat), state.view_maker()(seat)):
                assert (view["seat"], view["hand"], view["legal"]) == (seat, [], []), (game_id, seat)


def test_a_json_copy_turns_tuples_into_lists_and_shares_no_container():
    """``views.json_copy`` (how a state's own records go into a view): dicts, lists and tuples
    as lists, copied all the way down, so the reader can change any part of its view without
    touching the record (the docstring's "shares no container")."""
    from engine_service.rules.views import json_copy

    inner = {"cards": ["AS", "KS"]}
    record = {"tricks": (inner, [inner]), "winner": 0, "name": "x"}
    copied = json_copy(record)
    assert copied == {"tricks": [inner, [inner]], "winner": 0, "name": "x"}
    assert type(copied["tricks"]) is list
    copied["tricks"][0]["cards"].append("QS")
    copied["tricks"][1][0]["cards"].clear()
    assert record == {"tricks": ({"cards": ["AS", "KS"]}, [{"cards": ["AS", "KS"]}]), "winner": 0, "name": "x"}


@pytest.mark.parametrize("game_id", GAMES)
def test_determinize_reads_only_the_view(game_id):
    """Every game samples a state the seat cannot tell from the real one, from its view alone;
    a spectator's view (no seat) is refused with InconsistentView."""
    game = get_game(game_id)
    for i, state in enumerate(iter_states(game, 7000)):
        if i % 5:
            continue
        seat = state.to_act()
        v = state.view(seat)
        sample = game.determinize(v, random.Random(i))
        assert sample.view(seat) == v
        assert sample.legal_actions() == state.legal_actions()
        with pytest.raises(InconsistentView):
            game.determinize(state.public_view(), random.Random(i))


@pytest.mark.parametrize("game_id", GAMES)
def test_determinize_refuses_another_games_seat_view(game_id):
    """``Game.determinize`` (game.py): InconsistentView for a view no state of this game can
    show, another game's among them. Every other game's seat views, at every tenth decision of
    a random match, are refused so, however much they look alike (two two-player games with
    seats 0 and 1); Klaberjass, Jo-Jotte and Georgian Joker raised KeyError or a wrong
    refusal (MalformedAction, InvalidOptions) from deep in their samplers."""
    game = get_game(game_id)
    refused = 0
    for other in GAMES:
        if other == game_id:
            continue
        for i, state in enumerate(iter_states(get_game(other), 7600)):
            if i % 10:
                continue
            with pytest.raises(InconsistentView, match=f"not a {game_id} view"):
                game.determinize(state.view(state.to_act()), random.Random(i))
            refused += 1
    assert refused >= 30


@pytest.mark.parametrize("game_id", GAMES)
def test_a_determinized_state_has_no_transcript(game_id):
    """A sampled state holds only its current deal's history: export refuses it instead of
    replaying that deal from a new match (wrong dealer and seats when deals were played
    before); the real state of the same moment exports and checks out."""
    game = get_game(game_id)
    refused = 0
    for i, state in enumerate(iter_states(game, 7100)):
        if i % 7 or not state.deal_results():
            continue
        seat = state.to_act()
        sample = game.determinize(state.view(seat), random.Random(i))
        with pytest.raises(TranscriptError, match="does not start at the beginning"):
            transcript.export(sample)
        assert transcript.check(transcript.export(state))[0] is None
        refused += 1
    assert refused >= 3


@pytest.mark.parametrize("game_id", GAMES)
def test_a_determinized_state_after_one_deal_has_no_transcript_either(game_id):
    """Every sampled state of the second deal: its history holds one deal and it has one
    result, as a match's second deal would not, so only the replay can tell. A Georgian Joker
    one raised RuntimeError ("no player action is due": the second deal's actions replayed on
    the first deal, one card a player) instead of TranscriptError: export replays only a deal
    where one is due and only a legal action where a seat is to act."""
    game = get_game(game_id)
    refused = 0
    for i, state in enumerate(iter_states(game, 7100)):
        if len(state.deal_results()) != 1:
            continue
        sample = game.determinize(state.view(state.to_act()), random.Random(i))
        with pytest.raises(TranscriptError, match="does not start at the beginning"):
            transcript.export(sample)
        refused += 1
    assert refused >= 3


@pytest.mark.parametrize("game_id", GAMES)
def test_a_history_dealing_where_no_deal_is_due_has_no_transcript(game_id):
    """A history that deals again in the middle of a deal (NOTATION 3: a deal's record is its
    deck, then its steps) is not a match's: export refuses it with TranscriptError before
    handing the replay a deck it does not expect. No state of the rules writes one; the check
    keeps a state that claims such a history from failing deeper with another error."""
    game = get_game(game_id)
    state = next(s for s in iter_states(game, 7300) if s.history() and s.to_act() >= 0)
    history = state.history()

    class Claims:
        """``state`` with its first deal recorded twice."""
        def __getattr__(self, name):
            return getattr(state, name)

        def history(self):
            return [history[0], *history]

    with pytest.raises(TranscriptError) as info:
        transcript.export(Claims())  # type: ignore[arg-type]
    assert str(info.value) == transcript.NOT_FROM_THE_START
    assert transcript.check(transcript.export(state))[0] is None


@pytest.mark.parametrize("game_id", GAMES)
def test_a_state_whose_results_are_not_its_historys_has_no_transcript(game_id):
    """Export replays a state's history and refuses the state unless the replay ends where the
    state stands: its seat to act, dealer, match result and every deal result (NOTATION 3: a
    transcript reports exactly the results the engine does). A state whose first deal's result
    differs from what its history scores (no state of the rules has one) is refused with
    TranscriptError, not written as a transcript whose deal results are the replay's."""
    game = get_game(game_id)
    state = next(s for s in iter_states(game, 7400) if len(s.deal_results()) == 2)
    results = state.deal_results()

    class Claims:
        """``state`` with its first deal's result one key short."""
        def __getattr__(self, name):
            return getattr(state, name)

        def deal_results(self):
            first = dict(results[0])
            first.popitem()
            return [first, *results[1:]]

    with pytest.raises(TranscriptError) as info:
        transcript.export(Claims())  # type: ignore[arg-type]
    assert str(info.value) == transcript.NOT_FROM_THE_START
    assert transcript.check(transcript.export(state))[0] is None


@pytest.mark.parametrize("moves", [0, 1, 2])
def test_a_laid_out_position_has_no_transcript(moves):
    """A Japanese Joker ``position`` has no deal in its history: bare, it replays to a new
    match waiting for its deal; played on, its history starts with an action, which the
    replay of a new match has no seat to act for. Either way export refuses it with the same
    TranscriptError (an action first once reached the replay's step with no deal to add it
    to: only an early check of the history's first item kept that from an AssertionError)."""
    st = get_game("japanese_joker").position(trump="NT", hands=[["7D", "9C"], ["8D", "TC"]], to_act=0)
    for _ in range(moves):
        st.apply(st.legal_actions()[0])
    assert len(st.history()) == moves and not st.deal_results()
    with pytest.raises(TranscriptError) as info:
        transcript.export(st)
    assert str(info.value) == transcript.NOT_FROM_THE_START


@pytest.mark.parametrize("game_id", GAMES)
def test_thousands_of_seeded_deals(game_id):
    """3,000 seeded random deals per game (whole matches, under the defaults and every option
    set): one seat to act in range, a legal action every time, the pack whole after every deal,
    one result per completed deal, and the rulebook's arithmetic at every match end."""
    game = get_game(game_id)
    pack_mask = sum(1 << c for c in game.pack)
    sets = option_sets(game_id)
    deals = matches = 0
    seed = 0
    while deals < 3000:
        rng = random.Random(90_000 + seed)
        state = game.new_state(sets[seed % len(sets)], first_dealer=rng.randrange(game.num_seats))
        seed += 1
        in_match = 0
        while True:
            who = state.to_act()
            if who == TERMINAL:
                break
            if who == CHANCE:
                assert len(state.deal_results()) == in_match, "one result per completed deal"
                state.deal(shuffled(game, rng))
                continue
            assert 0 <= who < game.num_seats
            legal = state.legal_ids()
            assert legal
            before = len(state.deal_results())
            state.apply_id(legal[int(rng.random() * len(legal))])
            if len(state.deal_results()) > before:
                assert len(state.deal_results()) == before + 1
                deals += 1
                in_match += 1
                total = 0
                for mask in state.zones().values():
                    assert total & mask == 0
                    total |= mask
                assert total in (0, pack_mask), "pack not conserved over the deal"
        matches += 1
        assert state.result()["over"] and state.result()["winners"]
        checks(game_id).check_scores(state)
    assert matches >= 10


def _scribble(value) -> None:
    """Mutate every list and dict inside ``value`` in place."""
    if isinstance(value, dict):
        for v in list(value.values()):
            _scribble(v)
        value["scribbled"] = True
    elif isinstance(value, list):
        for v in value:
            _scribble(v)
        value.append("scribbled")


@pytest.mark.parametrize("game_id", GAMES)
def test_a_view_shares_nothing_with_the_state(game_id):
    """A view is the caller's to keep or change: scribbling over every list and dict of one
    (as an in-process bot of the arena might) changes neither the state nor its later views
    (Klaberjass's previous_deal and Jo-Jotte's last deal were the state's own result records,
    which deal_results() shares read-only by contract)."""
    game = get_game(game_id)
    for seed in range(3):
        for i, state in enumerate(iter_states(game, 7000 + seed, option_sets(game_id)[seed % len(option_sets(game_id))])):
            if i % 7:
                continue
            before = snapshot(state)
            for seat in range(game.num_seats):
                _scribble(state.view(seat))
            _scribble(state.public_view())
            assert snapshot(state) == before, (game_id, seed, i)


@pytest.mark.parametrize("game_id", GAMES)
def test_another_games_option_set_is_refused_as_unknown_options(game_id):
    """A game takes its own validated option set as it is, and refuses another game's with
    InvalidOptions naming an option it does not know (not a KeyError later in play)."""
    from engine_service.rules.errors import InvalidOptions
    game = get_game(game_id)
    own = game.options({})
    assert game.options(own) is own
    for other_id in GAMES:
        if other_id == game_id:
            continue
        foreign = get_game(other_id).options({})
        with pytest.raises(InvalidOptions) as refused:
            game.new_state(foreign)
        named = refused.value.details["option"]
        assert named in foreign and named not in own and "unknown option" in refused.value.message
