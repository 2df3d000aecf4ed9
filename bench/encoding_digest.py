"""A digest of everything the codec encodes over many seeded random matches of every game (a
check, not a benchmark): ``python bench/encoding_digest.py [--matches 24] [--seed 1]``.

Run it on two trees and compare the printed digests: equal digests, byte-identical views, events
and answers (and rules views: their ``repr``, types and key order included). Matches of one
game are played interleaved (one action of each in turn), so the codec's memos see the mix of
contents a server sees; every state is shown to every audience (each seat, the spectator, the
admin) through the state's ``view_maker`` as the session layer builds them, and to the seats
through ``view()`` too, with the statuses, deadlines and commitments cycling; each envelope is
encoded as a View, in a watch event and in a SubmitAction answer.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine_service.command_line import parse_args  # noqa: E402
from engine_service.rules.registry import all_games  # noqa: E402
from engine_service.rules.game import CHANCE  # noqa: E402
from engine_service.sessions import api  # noqa: E402
from engine_service.sessions.views import ADMIN, SPECTATOR, view_for  # noqa: E402
from engine_service.transport import codec  # noqa: E402

_STATUSES = ("active", "active", "finished", "waiting", "terminated")
_DEADLINES = (None, 1_764_000_000.25, None, 1_764_000_123.999999)
_COMMITMENTS = ("", "c0ffee" * 8)
_SCOPED = "encodings" in api.ViewEnvelope.__dataclass_fields__


def random_options(game, rng: random.Random) -> dict:
    out = {}
    for spec in game.option_specs:
        if spec.values:
            out[spec.name] = rng.choice(spec.values)
        elif spec.kind == "bool":
            out[spec.name] = rng.random() < 0.5
        else:
            out[spec.name] = spec.default
    return out


def digest_game(game, matches: int, seed: int, counts: dict) -> str:
    rng = random.Random(f"{game.id}-{seed}")
    h = hashlib.sha256()
    tables = []
    for i in range(matches):
        try:
            options = game.options(random_options(game, rng) if i % 2 else None)
        except Exception:
            options = game.options(None)
        tables.append([f"m{i:03d}-{game.id}", game.new_state(options, first_dealer=i % game.num_seats), 0])
    live = list(tables)
    step = 0
    while live:
        for t in list(live):
            match_id, state, seq = t
            if state.to_act() == CHANCE:
                cards = list(game.pack)
                rng.shuffle(cards)
                state.deal(cards)
            if state.is_over():
                live.remove(t)
                continue
            legal = state.legal_actions()
            action = rng.choice(legal)
            state.apply(action, state.to_act())
            seq = t[2] = seq + 1
            if state.to_act() == CHANCE and not state.is_over():
                cards = list(game.pack)
                rng.shuffle(cards)
                state.deal(cards)
            make = state.view_maker()
            scope = {} if _SCOPED else None  # the session layer's one dict per state
            audiences = list(range(game.num_seats)) + [SPECTATOR, ADMIN]
            for k, aud in enumerate(audiences):
                step += 1
                view = view_for(state, aud, make)
                h.update(repr(view).encode())
                env = api.ViewEnvelope(match_id=match_id, seq=seq, status=_STATUSES[step % 5], view=view,
                                       deadline=_DEADLINES[step % 4],
                                       seat=aud if isinstance(aud, int) else None,
                                       deal_commitment=_COMMITMENTS[step % 2],
                                       **({"encodings": scope} if _SCOPED else {}))
                h.update(codec.view_bytes(env))
                ev = api.MatchEvent(kind="action", seq=seq, match_id=match_id, seat=k % game.num_seats,
                                    action=action, by=("player", "bot", "auto")[step % 3], view=env)
                h.update(codec.event_bytes(ev))
                h.update(codec.submit_response_bytes(api.SubmitResult(seq=seq, action=action, view=env,
                                                                      duplicate=step % 7 == 0)))
                # the same event for every audience (as the session publishes an action)
                h.update(codec.event_bytes(api.MatchEvent(kind="action", seq=seq, match_id=match_id,
                                                          seat=seq % game.num_seats, action=action,
                                                          by="player", view=env)))
                counts["envelopes"] += 1
                if isinstance(aud, int) and step % 3 == 0:  # the single-audience path
                    own = state.view(aud)
                    h.update(repr(own).encode())
                    env2 = api.ViewEnvelope(match_id=match_id, seq=seq, status="active", view=own, seat=aud)
                    h.update(codec.view_bytes(env2))
                    counts["envelopes"] += 1
            if step % 97 == 0:  # an event without a view, and one with details
                h.update(codec.event_bytes(api.MatchEvent(kind="presence", seq=seq, match_id=match_id,
                                                          details={"seats": [{"seat": 0, "present": True}]})))
    return h.hexdigest()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--matches", type=int, default=24, help="matches per game")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--game", action="append")
    args = parse_args(ap, argv)
    total = hashlib.sha256()
    for game in all_games():
        if args.game and game.id not in args.game:
            continue
        counts = {"envelopes": 0}
        d = digest_game(game, args.matches, args.seed, counts)
        total.update(d.encode())
        print(f"{game.id:15s} envelopes={counts['envelopes']:,} digest={d}", flush=True)
    print(f"all {total.hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
