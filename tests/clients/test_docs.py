"""docs/api.md and docs/rules.md stay true: every error reason the engine can send is
documented, every RPC is described, the Python example and the Node.js snippets run against a
real engine, and the rules index names every game, rulebook section and documented choice."""

from __future__ import annotations

import ast
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from clients.local_service import LocalService
from engine_service.rules import registry
from tests.shared_paths import shared_dir

from .test_node_client import NODE_DIR, node, npm_ci  # noqa: F401 (the fixture: Node.js, npm ci once)

ROOT = Path(__file__).resolve().parents[2]
API = (ROOT / "docs" / "api.md").read_text()
RULES = (ROOT / "docs" / "rules.md").read_text()
NODE_MODULES = NODE_DIR / "node_modules"

#: Reasons that never reach a client: the abstract base class, and the determinization error
#: that only bots see.
NOT_SENT = {"RULES_ERROR", "INCONSISTENT_VIEW"}


def engine_reasons() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "engine_service").rglob("*.py"):
        if "generated" in path.parts:
            continue
        text = path.read_text()
        found |= set(re.findall(r'\breason\s*=\s*"([A-Z][A-Z_]+)"', text))
        found |= {m[1] for m in re.findall(r'code, reason = "([A-Z_]+)", "([A-Z_]+)"', text)}
    return found - NOT_SENT


def test_every_error_reason_is_documented():
    reasons = engine_reasons()
    assert len(reasons) > 30
    missing = sorted(r for r in reasons if f"`{r}`" not in API)
    assert not missing, f"reasons missing from docs/api.md: {missing}"


def _module_strings(tree: ast.Module) -> dict[str, str]:
    """A module's top-level ``NAME = "text"`` constants."""
    return {target.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            for target in node.targets if isinstance(target, ast.Name)}


def sent_reason_codes() -> dict[str, set[str]]:
    """The status code each reason is sent with, read from where the engine makes its errors:
    a call of a session error class (its ``code``; its own ``reason`` unless the call names
    one), a ``MappedError(grpc.StatusCode.X, message, reason, ...)``, and the rules errors
    by the transport's table. A reason passed through a variable is not resolved here."""
    from engine_service.sessions import api
    from engine_service.transport import errors

    session = {name: cls for module in (api, errors) for name, cls in vars(module).items()
               if isinstance(cls, type) and issubclass(cls, api.SessionError)}
    found: dict[str, set[str]] = {}
    for cls, code in errors._RULES_CODES.items():
        found.setdefault(cls.reason, set()).add(code.name)
    for path in (ROOT / "engine_service").rglob("*.py"):
        if "generated" in path.parts:
            continue
        tree = ast.parse(path.read_text())
        constants = _module_strings(tree)

        def text(node: ast.expr | None) -> str | None:
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                return node.value
            return constants.get(node.id) if isinstance(node, ast.Name) else None

        for call in ast.walk(tree):
            if not isinstance(call, ast.Call):
                continue
            name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
            keywords = {k.arg: k.value for k in call.keywords}
            if name in session:
                code = session[name].code
                reason = text(keywords["reason"]) if "reason" in keywords else session[name].reason
            elif name == "MappedError" and call.args and isinstance(call.args[0], ast.Attribute):
                code = call.args[0].attr
                reason = text(keywords.get("reason", call.args[2] if len(call.args) > 2 else None))
            else:
                continue
            if reason is not None:
                found.setdefault(reason, set()).add(code)
    return found


def test_each_reason_is_documented_under_the_status_code_it_is_sent_with():
    """docs/api.md's table of codes and reasons: a client switches on the code first, so a
    reason listed under another code than the one the engine sends it with (or missing from
    the code's row) misleads every client written from the table."""
    rows = _markdown_rows("| code | reasons | what to do |")
    documented: dict[str, set[str]] = {}
    for code, reasons, _ in rows:
        for reason in re.findall(r"`([A-Z_]+)`", reasons):
            documented.setdefault(reason, set()).add(code.strip("`"))
    sent = sent_reason_codes()
    assert len(sent) > 50 and {"SEAT_LEFT", "RESPONSE_TOO_LARGE", "OUT_OF_FILE_DESCRIPTORS"} <= set(sent)
    wrong = {reason: (sorted(codes), sorted(documented.get(reason, ())))
             for reason, codes in sent.items() if codes != documented.get(reason, set())}
    assert not wrong, f"reason: (codes sent, codes in docs/api.md's table): {wrong}"


def test_the_zero_values_note_lists_exactly_the_optional_fields_of_the_protos():
    """docs/api.md, "Zero values": a client in a language without presence tests only the
    fields this list names by presence; a field made `optional` later and missing here is read
    by value, its 0 taken for unset (seat 0, bid:0)."""
    from engine_service.transport.generated import admin_pb2, card_games_pb2, cards_pb2, match_pb2

    declared = {f"{message.name}.{field.name}"
                for module in (admin_pb2, card_games_pb2, cards_pb2, match_pb2)
                for message in module.DESCRIPTOR.message_types_by_name.values()
                for field in message.fields
                if field.containing_oneof is not None and field.containing_oneof.name == f"_{field.name}"}
    zero_values = API[API.index("* **Zero values.**"):]
    note = zero_values[re.search(r"Only the fields\s+declared", zero_values).start():zero_values.index("Test them by presence")]
    listed = set()
    for message, fields in re.findall(r"`(\w+)\.(\w+(?:` / `\w+)*)`", note):
        listed |= {f"{message}.{name}" for name in fields.split("` / `")}
    assert len(declared) > 10
    assert listed == declared, f"listed only: {sorted(listed - declared)}; optional only: {sorted(declared - listed)}"


def test_no_doc_names_a_path_of_one_machine():
    """The commands of the docs run from a checkout: bench/README.md's callgrind commands named
    /work/main/.venv/bin/python, the virtualenv of the machine they were measured on."""
    docs = [ROOT / "README.md", ROOT / "bench" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for path in docs:
        found = re.findall(r"(?<![\w.])/(?:work|home|root)/\S*", path.read_text())
        assert not found, f"{path.relative_to(ROOT)} names {found}"


def test_every_rpc_is_documented():
    for proto in (ROOT / "proto" / "cardgames" / "v1").glob("*.proto"):
        for rpc in re.findall(r"^\s*rpc (\w+)\(", proto.read_text(), re.MULTILINE):
            assert f"`{rpc}" in API, f"{rpc} ({proto.name}) is not described in docs/api.md"


def test_python_example_runs(engine):
    (example,) = [block for block in re.findall(r"```python\n(.*?)```", API, re.DOTALL)
                  if "clients.cardgames_client" in block]
    code = example.replace("127.0.0.1:50051", engine.target)
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def _markdown_rows(heading_line: str) -> list[list[str]]:
    """The data rows' cells of docs/api.md's first table at or after ``heading_line``."""
    lines = API[API.index(heading_line):].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows[2:]  # the header and the |---| line


#: Table options that add verbs (docs/api.md, Actions), so that the playouts meet them.
VERB_OPTIONS = {"klaberjass": {"kl_schmeiss": True, "kl_meld_declaration": "optional",
                               "kl_bella_announcement": "required"},
                "jojotte": {"jj_meld_declaration": "optional"}}
_CARD = re.compile(r"(?:[AKQJT98765][SHDC]|X[12])")


def _action_shape(action: str) -> str:
    """An action with its card, suit and number arguments replaced by their kind."""
    verb, *args = action.split(":")
    kinds = ["<card>" if _CARD.fullmatch(a) else "<suit>" if a in ("S", "H", "D", "C")
             else "<n>" if a.isdigit() else a for a in args]
    return ":".join([verb, *kinds])


def test_the_actions_table_lists_every_form_of_action_each_game_offers():
    """docs/api.md's table of actions per game: each example is its game's notation, and every
    form of legal action seen in a few seeded random matches (with the options that add
    verbs) is among the examples, so a frontend drawing the table's forms meets no other."""
    from engine_service.rules import CHANCE, TERMINAL, get_game

    names = {"Klaberjass": "klaberjass", "Jo-Jotte": "jojotte", "Georgian Joker": "georgian_joker",
             "Japanese Joker": "japanese_joker"}
    rows = {names[game]: re.findall(r"`([a-z_]+(?::\w+)*)`", actions)
            for game, actions in _markdown_rows("| game | actions |")}
    assert set(rows) == set(names.values())
    for game_id, examples in rows.items():
        game = get_game(game_id)
        examples = [a for a in examples if not a.startswith(("kl_", "jj_"))]  # the options named
        for action in examples:
            game.new_state({}, first_dealer=0).parse_action(action)  # MalformedAction if not
        seen: set[str] = set()
        for options in ({}, VERB_OPTIONS.get(game_id, {})):
            for seed in range(4):
                rng = random.Random(seed)
                state = game.new_state(options, first_dealer=0)
                while state.to_act() != TERMINAL:
                    if state.to_act() == CHANCE:
                        state.deal(rng.sample(game.pack, len(game.pack)))
                        continue
                    legal = state.view(state.to_act())["legal"]
                    seen |= {_action_shape(a) for a in legal}
                    state.apply(rng.choice(legal), state.to_act())
        missing = seen - {_action_shape(a) for a in examples}
        assert not missing, f"{game_id}: forms of legal actions docs/api.md's table lacks: {sorted(missing)}"


def test_every_actor_and_auto_move_reason_of_action_events_is_documented():
    """A table shows "played for you" from an ACTION event's ``by`` and ``reason``: docs/api.md
    lists every pair the server sends (the reasons are the metrics' AUTO_MOVE_REASONS, which
    the clock records), and nothing else."""
    from engine_service.observability.metrics import AUTO_MOVE_REASONS
    from engine_service.transport.generated import match_pb2

    rows = _markdown_rows("show \"played for you\" without guessing from the timing:")
    documented = {(by.strip("`"), reason.strip("`").replace("empty", "")) for by, reason, _ in rows}
    actors = {name for name in match_pb2.Actor.keys() if name != "ACTOR_UNSPECIFIED"}
    expected = ({("ACTOR_PLAYER", ""), ("ACTOR_BOT", ""), ("ACTOR_BOT", "takeover"), ("ACTOR_BOT", "abandoned")}
                | {("ACTOR_AUTO", r) for r in AUTO_MOVE_REASONS})
    assert documented == expected
    assert {by for by, _ in documented} == actors


def test_snapshot_seat_keys_are_documented_and_are_seat_info_fields(engine):
    """The keys of a SNAPSHOT's ``details.seats`` are the ones docs/api.md lists, and each is a
    field of ``SeatInfo`` too: docs/api.md calls them "the facts of SeatInfo", so a frontend
    finds in GetMatch whatever a stream's seats say (``left`` was once in the events alone)."""
    import grpc
    from google.protobuf.json_format import MessageToDict

    from engine_service.transport.generated import card_games_pb2, card_games_pb2_grpc, match_pb2

    with grpc.insecure_channel(engine.target) as channel:
        api = card_games_pb2_grpc.CardGamesServiceStub(channel)
        match = api.CreateMatch(card_games_pb2.CreateMatchRequest(game="klaberjass"), timeout=30).match
        stream = api.WatchMatch(card_games_pb2.WatchMatchRequest(match_id=match.match_id), timeout=30)
        first = next(iter(stream))
        stream.cancel()
    sent = set(MessageToDict(first.details)["seats"][0])
    (row,) = [cells for cells in _markdown_rows("| event | details |") if cells[0] == "`SNAPSHOT`"]
    keys_text = row[1].split("}", 1)[0]
    keys_text = re.sub(r':\s*"\w+"(\s*\\\|\s*"\w+")*', "", keys_text)  # "kind": "open" \| "bot": its values
    listed = set(re.findall(r'"(\w+)"', keys_text))
    assert sent == listed
    assert listed <= set(match_pb2.SeatInfo.DESCRIPTOR.fields_by_name)


def test_python_stubs_section_generates_stubs_that_decode_a_stale_action(engine, tmp_path):
    """docs/api.md "Python with the generated stubs": its protoc command, run as written (with
    the output in a temporary folder), makes stubs that its snippet imports as cardgames.v1;
    the snippet decodes an ABORTED status as the page says (ErrorInfo, the View, RequestInfo),
    using nothing of this repository."""
    section = API[API.index("### Python with the generated stubs"):]
    command = section.split("```sh\n", 1)[1].split("```", 1)[0].strip()
    snippet = section.split("```python\n", 1)[1].split("```", 1)[0]
    gen = tmp_path / "gen"
    gen.mkdir()
    assert command.startswith("python ") and command.count("=gen ") == 3
    command = shlex.quote(sys.executable) + command[len("python"):].replace("=gen ", f"={shlex.quote(str(gen))} ")
    done = subprocess.run(["sh", "-c", command], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (gen / "cardgames" / "v1" / "card_games_pb2_grpc.py").exists()
    code = snippet.replace("127.0.0.1:50051", engine.target)
    # -I: neither PYTHONPATH nor the working folder, so the snippet can import nothing of this repository
    result = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(gen)!r})\n{code}"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    code_name, reason, view_seq, request_id = result.stdout.split()
    assert (code_name, reason, view_seq) == ("ABORTED", "STALE_SEQUENCE", "1")
    assert request_id


def test_int_options_without_a_maximum_stay_below_2_53_as_docs_api_md_says(engine):
    """docs/api.md "64-bit integers" (and OptionSpec.maximum's comment): the API's int64 values
    fit a JavaScript number; an int option without a maximum takes at most 2^53 - 1, which
    comes back exactly in the summary and in View.table's doubles, and 2^53 is INVALID_OPTIONS."""
    import grpc
    from google.protobuf.json_format import MessageToDict

    from engine_service.transport.generated import card_games_pb2, card_games_pb2_grpc, match_pb2

    top = 2**53 - 1
    assert "2^53 - 1" in API and "2^53 - 1" in (ROOT / "proto" / "cardgames" / "v1" / "match.proto").read_text()
    with grpc.insecure_channel(engine.target) as channel:
        api = card_games_pb2_grpc.CardGamesServiceStub(channel)
        open_ended = [(game.id, spec) for game in api.ListGames(card_games_pb2.ListGamesRequest(), timeout=30).games
                      for spec in game.options
                      if spec.type == match_pb2.OPTION_TYPE_INT and not spec.allowed_values
                      and not spec.HasField("maximum")]
        assert {spec.name for _, spec in open_ended} >= {"kl_target_score", "jj_game_target", "jj_match_rubbers"}
        for game, spec in open_ended:
            assert str(top) in spec.allowed_text
            request = card_games_pb2.CreateMatchRequest(game=game)
            request.options[spec.name].int_value = top + 1
            try:
                api.CreateMatch(request, timeout=30)
                raise AssertionError(f"{spec.name} = 2^53 was accepted")
            except grpc.RpcError as err:
                assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, spec.name
            request.options[spec.name].int_value = top
            match = api.CreateMatch(request, timeout=30).match
            assert match.options[spec.name].int_value == top
            view = api.GetView(card_games_pb2.GetViewRequest(match_id=match.match_id), timeout=30).view
            assert MessageToDict(view.table)["options"][spec.name] == top


def test_rules_index_covers_every_game_and_section():
    for game in registry.all_games():
        assert f"`{game.id}`" in RULES, game.id
        assert game.rulebook in RULES, game.rulebook
        assert f"games/{game.id}.md" in RULES
        rulebook = (shared_dir() / "rules" / game.rulebook).read_text()
        for number, title in re.findall(r"^## (\d+)\. (.+)$", rulebook, re.MULTILINE):
            assert title.strip() in RULES, f"{game.rulebook} section {number} {title!r} is not indexed"
        for spec in game.option_specs:
            assert f"`{spec.name}`" in RULES, f"{game.id} option {spec.name}"


def test_rules_index_names_and_describes_each_game_as_list_games_does():
    """docs/rules.md's game table and each game's section name the game, its seats and rulebook
    and describe it in the words ListGames sends (GameInfo's name, num_seats, rulebook and
    description: a game's own, JJK-2.1's two players, GJ-2.1's four...), so the two cannot
    drift apart."""
    for game in registry.all_games():
        row = re.search(rf"^\| `{game.id}` \| (.*) \|$", RULES, re.MULTILINE)
        assert row, game.id
        name, seats, rulebook, *_ = (cell.strip() for cell in row.group(1).split(" | "))
        assert (name, seats, rulebook) == (game.name, str(game.num_seats), f"`rules/{game.rulebook}`"), game.id
        section = re.search(rf"^## (.+) \(`{game.id}`\)\n\n(.+)\n", RULES, re.MULTILINE)
        assert section, game.id
        assert section.groups() == (game.name, game.description), game.id


def test_rules_index_option_rows_say_what_list_games_says():
    """docs/rules.md's option tables are the new-table dialog's text on paper: each row's
    rule ids and meaning are the ListGames ones (OptionSpec.rules, OptionSpec.help), so the
    two cannot drift apart."""
    for game in registry.all_games():
        section = RULES[RULES.index(f"(`{game.id}`)"):]
        for spec in game.option_specs:
            row = re.search(rf"^\| `{spec.name}` \|(.*)\|$", section, re.MULTILINE)
            assert row, f"{game.id} option {spec.name}"
            *_, rules, meaning = (cell.strip() for cell in row.group(1).split(" | "))
            assert rules == ", ".join(spec.rules), spec.name
            assert meaning == spec.help, spec.name


@pytest.mark.parametrize("game,option,phrases", [
    # KL-7.2 / KL-A14: what the bonus is and what it is worth
    ("klaberjass", "kl_trump_kqj_bonus", ("king, queen and jack", "20", "50", "bella")),
    # KL-8.1 / KL-A16: what the two values mean
    ("klaberjass", "kl_ten_value", ("10", "0", "ten won in a trick")),
    # JJ-9.3b / JJ-A25: one phrase per value
    ("jojotte", "jj_defender_win_award",
     ("two most valuable tricks", "both players' trick points", "his own trick points")),
    # JJ-9.3 / JJ-A24: the default model in words, not only its source's name
    ("jojotte", "jj_undoubled_scoring", ("wins the comparison", "each player enters his own")),
])
def test_option_help_says_what_each_value_does(game, option, phrases):
    """A player choosing house rules in a new-table dialog reads OptionSpec.help: it says what
    each value does (these said "the bonus of the seed", "what the defender enters")."""
    spec = next(s for s in registry.get_game(game).option_specs if s.name == option)
    for phrase in phrases:
        assert phrase in spec.help, (option, phrase)


def test_rules_index_links_exist():
    for link in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", RULES):
        if link.startswith("http"):
            continue
        assert (ROOT / "docs" / link).exists(), link


def test_the_client_librarys_example_plays_a_match(engine):
    """The example in clients/cardgames_client.py's docstring plays a whole match against a
    bot (the bot may move first, PRESENCE events repeat a view: act() copes with both)."""
    import clients.cardgames_client as cg

    (example,) = re.findall(r"Everything is asynchronous \(grpc\.aio\)::\n\n(.*?)\n\n(?=\S)", cg.__doc__, re.DOTALL)
    code = "\n".join(line[4:] for line in example.splitlines()).replace("127.0.0.1:50051", engine.target)
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr


#: What the Node.js snippets of docs/api.md are run with: a match of four open seats, each
#: played through the snippets' client, until a deal is scored, then a stale action.
_NODE_DRIVER = r"""
const crypto = require('crypto');
const call = (method, req, meta) => new Promise((resolve, reject) =>
  api[method](req, meta || new grpc.Metadata(), (err, res) => (err ? reject(err) : resolve(res))));
const bearer = (token, extra = {}) => {
  const m = new grpc.Metadata();
  m.set('authorization', `Bearer ${token}`);
  for (const [k, v] of Object.entries(extra)) m.set(k, v);
  return m;
};
(async () => {
  const out = {};
  // an option's value as ListGames gave it (with oneofs' `value` key) is sent back as it is
  const spec = (await call('ListGames', {})).games.find((g) => g.id === 'georgian_joker')
    .options.find((o) => o.name === 'khishti_penalty');
  const created = await call('CreateMatch', { game: 'georgian_joker', options: { khishti_penalty: spec.allowed_values[1] } });
  const matchId = created.match.match_id;
  const tokens = [];
  for (let i = 0; i < 4; i++) tokens.push((await call('JoinMatch', { match_id: matchId, seat: i, player_name: `p${i}` })).seat_token);
  const first = (await call('GetView', { match_id: matchId }, bearer(tokens[0]))).view;
  out.first = { seat: first.seat, seq: first.seq, status: first.status, to_act_type: typeof first.to_act,
                synthetic: [first._to_act, first._seat], sent_option: spec.allowed_values[1],
                deal_results: (first.scores.deal_results?.values ?? []).map(fromValue),
                options: fromStruct(first.table).options };
  const events = [];
  const stream = api.WatchMatch({ match_id: matchId }, bearer(tokens[0]));
  stream.on('data', (ev) => events.push(ev));
  const ending = [];  // what the page says a stream's end looks like in grpc-js
  const ended = new Promise((resolve) => stream.on('close', resolve));
  stream.on('error', (err) => ending.push(`error ${err.code}`));
  stream.on('status', (st) => ending.push(`status ${st.code}`));
  stream.on('end', () => ending.push('end'));
  for (let n = 0; n < 40 && !events.some((ev) => fromStruct(ev.details)?.deal_scored !== undefined); n++) {
    const pub = (await call('GetView', { match_id: matchId })).view;
    if (pub.to_act === undefined) { await new Promise((r) => setTimeout(r, 50)); continue; }
    const mine = (await call('GetView', { match_id: matchId }, bearer(tokens[pub.to_act]))).view;
    await call('SubmitAction', { match_id: matchId, action: mine.legal_actions[0].notation,
                                 expected_seq: mine.seq, client_action_id: crypto.randomUUID() }, bearer(tokens[pub.to_act]));
    await new Promise((r) => setTimeout(r, 20));
  }
  stream.cancel();
  await ended;
  out.ending = ending;
  const scored = events.find((ev) => fromStruct(ev.details)?.deal_scored !== undefined);
  const d = fromStruct(scored.details);
  out.scored = { kind: scored.kind, deal_scored: d.deal_scored, deal_number: scored.view.deal_number,
                 result: (scored.view.scores.deal_results?.values ?? []).map(fromValue)[d.deal_scored],
                 last_trick_winner: scored.view.last_trick && scored.view.last_trick.winner,
                 history: scored.view.trick_history.length };
  const now = (await call('GetView', { match_id: matchId })).view;
  const seat = now.to_act;
  try {
    await call('SubmitAction', { match_id: matchId, action: 'bid:0', expected_seq: now.seq + 5 },
               bearer(tokens[seat], { 'x-request-id': 'docs-node-1' }));
    out.stale = 'accepted';
  } catch (err) {
    const d2 = errorDetails(err);
    out.stale = { code: err.code, message: err.details, reason: d2.reason, metadata: d2.metadata,
                  view_seq: d2.view && d2.view.seq, view_seat: d2.view && d2.view.seat,
                  view_trump: d2.view && fromStruct(d2.view.table).trump, request_id: d2.requestId, seat };
    // a detail of a type the snippet did not load (v1 may add some) is skipped, not thrown on
    const status = Status.decode(err.metadata.get('grpc-status-details-bin')[0]);
    status.details.unshift({ type_url: 'type.googleapis.com/google.rpc.Help', value: Buffer.alloc(0) });
    const later = new grpc.Metadata();
    later.set('grpc-status-details-bin', Buffer.from(Status.encode(status).finish()));
    out.unknown_detail = errorDetails({ metadata: later }).reason;
  }
  out.now_seq = now.seq;
  // an enum value this client's protos do not know (a later server's EventKind 99): a number
  out.unknown_enum = def['cardgames.v1.WatchMatchResponse'].deserialize(Buffer.from([0x08, 99])).kind;
  console.log(JSON.stringify(out));
  process.exit(0);
})().catch((err) => { console.error(err); process.exit(1); });
"""


def node_snippet_program(target: str) -> str:
    """docs/api.md's three Node.js snippets as one program against ``target``, then the
    driver: the snippets run as written, except the one-line call of the first, replaced by
    the driver's calls, and the googleapis file list cut to clients/node/proto's one file, as
    the page says to."""
    section = API[API.index("### Node.js with @grpc/proto-loader"):]
    setup, structs, errors = re.findall(r"```js\n(.*?)```", section, re.DOTALL)[:3]
    example_call = re.search(r"^api\.GetView\(.*$", setup, re.MULTILINE)
    assert example_call, "the first Node.js snippet no longer ends with its GetView example"
    setup = setup.replace(example_call.group(0), "").replace("127.0.0.1:50051", target)
    assert "'google/rpc/error_details.proto', " in errors
    errors = errors.replace("'google/rpc/error_details.proto', ", "")
    # the names the snippets take as given (the driver sends its own tokens)
    given = "const PROTO_DIR = 'proto'; const seatToken = ''; const matchId = '';\n"
    return given + setup + structs + errors + _NODE_DRIVER


def run_node_snippets(node: str, node_modules: Path, target: str, workdir: Path) -> dict:
    """Runs :func:`node_snippet_program` in ``workdir`` (proto/ with the API and
    clients/node/proto's google.rpc file) and returns what the driver printed."""
    shutil.copytree(ROOT / "proto" / "cardgames", workdir / "proto" / "cardgames")
    shutil.copytree(ROOT / "clients" / "node" / "proto" / "google", workdir / "proto" / "google")
    (workdir / "docs_node.js").write_text(node_snippet_program(target))
    result = subprocess.run([node, "docs_node.js"], cwd=workdir, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "NODE_PATH": str(node_modules)})
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def check_node_snippets(out: dict) -> None:
    """What docs/api.md says a Node.js client gets with its loader options and helpers."""
    first = out["first"]
    # defaults: true fills the zeros of plain fields; longs: Number; enums: String
    assert first["seat"] == 0 and first["seq"] == 0 and first["status"] == "MATCH_STATUS_ACTIVE"
    assert first["to_act_type"] == "number"
    assert first["synthetic"] == ["to_act", "seat"]  # oneofs: true names each optional field set
    assert first["sent_option"] == {"string_value": "500", "value": "string_value"}
    assert first["deal_results"] == []  # unset until the first deal is scored, read as empty
    assert first["options"]["khishti_penalty"] == "500"  # fromStruct on View.table
    scored = out["scored"]
    # a deal's end: one ACTION event with details.deal_scored; its view is the next deal's
    assert scored["kind"] == "EVENT_KIND_ACTION" and scored["deal_scored"] == 0
    assert scored["deal_number"] == 1 and scored["history"] == 0
    assert set(scored["result"]) >= {"trump", "bids", "taken", "scores"}
    assert scored["last_trick_winner"] in range(4)
    assert scored["result"]["taken"][scored["last_trick_winner"]] == 1  # deal 0: one card each
    stale = out["stale"]
    assert stale["code"] == 10 and stale["reason"] == "STALE_SEQUENCE"  # grpc.status.ABORTED
    assert stale["message"].startswith("expected_seq")  # err.details is the message text
    assert stale["metadata"] == {"expected_seq": str(out["now_seq"] + 5), "seq": str(out["now_seq"])}
    assert stale["view_seq"] == out["now_seq"] and stale["view_seat"] == stale["seat"]
    assert stale["request_id"] == "docs-node-1"
    assert out["unknown_detail"] == "STALE_SEQUENCE"
    assert out["unknown_enum"] == 99
    assert out["ending"] == ["error 1", "status 1", "end"]  # cancelled: 'end' follows 'error'


def test_the_reconnect_backoff_cap_the_page_names_is_both_libraries():
    """Regression: docs/api.md said both libraries cap the channel's wait between connection
    attempts at 2 s while both set 1 s (grpc.max_reconnect_backoff_ms 1000): the page's
    number, its Node.js snippet's channel option and the two libraries' settings agree."""
    from clients.cardgames_client import CHANNEL_MAX_RECONNECT_BACKOFF_MS

    (stated,) = re.findall(r"both cap the channel's own wait between connection attempts at (\d+(?:\.\d+)?) s", API)
    (node_lib,) = re.findall(r"'grpc\.max_reconnect_backoff_ms': (\d+)", (NODE_DIR / "cardgames.js").read_text())
    (snippet,) = re.findall(r"'grpc\.max_reconnect_backoff_ms': (\d+)", API)
    assert float(stated) * 1000 == CHANNEL_MAX_RECONNECT_BACKOFF_MS == int(node_lib) == int(snippet)


def test_node_snippets_run(engine, node):
    """The Node.js snippets of docs/api.md (loader options, Struct to JSON, error details) run
    as written with @grpc/grpc-js and @grpc/proto-loader (clients/node's), and give what the
    page says: zero values filled, presence kept, Structs and a STALE_SEQUENCE's View read."""
    with tempfile.TemporaryDirectory() as workdir:
        out = run_node_snippets(node, NODE_MODULES, engine.target, Path(workdir))
    check_node_snippets(out)


def test_node_health_snippet_runs(engine, node):
    """docs/api.md's Node.js health check runs as written from the repository's root, with
    the health.proto that clients/node/proto ships (grpc-js and proto-loader have none), and
    the engine answers it SERVING."""
    section = API[API.index("### Node.js with @grpc/proto-loader"):]
    (snippet,) = [block for block in re.findall(r"```js\n(.*?)```", section, re.DOTALL) if "grpc.health.v1" in block]
    loader = "const grpc = require('@grpc/grpc-js');\nconst protoLoader = require('@grpc/proto-loader');\n"
    code = loader + snippet.replace("127.0.0.1:50051", engine.target)
    result = subprocess.run([node, "-e", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                            env={**os.environ, "NODE_PATH": str(NODE_MODULES)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "SERVING", result.stdout + result.stderr


#: The npm packages docs/api.md's TypeScript section uses, locked in clients/ts (installed by
#: the test, as clients/node's are).
TS_DIR = ROOT / "clients" / "ts"
_TS_PACKAGES = ("@bufbuild/protobuf", "@bufbuild/protoc-gen-es", "@connectrpc/connect",
                "@connectrpc/connect-node", "tsx", "typescript", "@types/node")


def _ts_section() -> tuple[str, str]:
    """docs/api.md's ``buf.gen.yaml`` and its TypeScript client."""
    gen = API[API.index("## Generating stubs in another language"):]
    (yaml,) = re.findall(r"```yaml\n(.*?)```", gen.split("### ", 1)[0], re.DOTALL)
    section = API[API.index("### TypeScript with protobuf-es and Connect"):]
    code = re.findall(r"```ts\n(.*?)```", section.split("\n### ", 1)[0], re.DOTALL)[0]  # the client
    return yaml, code


def test_the_typescript_section_names_the_versions_clients_ts_locks():
    """docs/api.md says which versions of the Connect and protobuf-es packages its TypeScript
    section was checked with; they are clients/ts's locked ones (an upgrade of the lock
    without the page, or the reverse, fails here)."""
    lock = json.loads((TS_DIR / "package-lock.json").read_text())["packages"]
    section = API[API.index("### TypeScript with protobuf-es and Connect"):]
    said = " ".join(section[:section.index("```ts")].split())  # the page's line breaks aside
    for first, second in (("@connectrpc/connect", "@connectrpc/connect-node"),
                          ("@bufbuild/protobuf", "@bufbuild/protoc-gen-es")):
        version = lock[f"node_modules/{first}"]["version"]
        assert lock[f"node_modules/{second}"]["version"] == version, (first, second)
        assert f"`{first}` and `{second}` {version}" in said, (first, version)


def test_typescript_section_imports_what_its_buf_gen_yaml_generates():
    """docs/api.md's buf.gen.yaml takes its inputs from this repository, and every generated
    module its TypeScript client imports (``./gen/<path>_pb.js``) comes from a .proto of those
    inputs: the google.rpc error details from clients/node/proto's file (protobuf-es ships
    only google.protobuf), so ``ConnectError.findDetails(ErrorInfoSchema)`` has its schema."""
    yaml, code = _ts_section()
    inputs = re.findall(r"- directory: (\S+)", yaml)
    assert inputs == ["proto", "clients/node/proto"]
    assert "import_extension=js" in yaml  # Node's ES modules and tsc's nodenext need ./x_pb.js
    imports = re.findall(r'import \{([^}]*)\} from "\./gen/([\w/]+)_pb\.js"', code)
    assert {path for _, path in imports} >= {"cardgames/v1/card_games", "google/rpc/status"}
    for names, path in imports:
        protos = [ROOT / d / f"{path}.proto" for d in inputs if (ROOT / d / f"{path}.proto").exists()]
        assert len(protos) == 1, path
        text = protos[0].read_text()
        for name in re.findall(r"\w+", names):
            base = name.removesuffix("Schema")
            assert re.search(rf"^(message|enum|service) {base} \{{", text, re.MULTILINE), (name, path)


def _ts_project(tmp_path: Path) -> tuple[str, str, dict[str, str], Path]:
    """docs/api.md's TypeScript section laid out in ``tmp_path`` as a reader would: its
    buf.gen.yaml run with ``buf generate`` and @bufbuild/protoc-gen-es (clients/ts's packages,
    installed from its lock file, ``npm ci``, when missing). Returns (yaml, client code, the
    environment with node_modules/.bin on PATH, that .bin folder)."""
    npm_ci(TS_DIR)
    modules = TS_DIR / "node_modules"
    assert all((modules / p / "package.json").exists() for p in _TS_PACKAGES), sorted(_TS_PACKAGES)
    yaml, code = _ts_section()
    (tmp_path / "node_modules").symlink_to(modules.resolve())
    (tmp_path / "package.json").write_text('{"type": "module"}\n')  # the client is an ES module
    (tmp_path / "buf.gen.yaml").write_text(yaml)
    shutil.copytree(ROOT / "proto" / "cardgames", tmp_path / "proto" / "cardgames")
    shutil.copytree(ROOT / "clients" / "node" / "proto", tmp_path / "clients" / "node" / "proto")
    exe = Path(sys.executable).with_name("buf")
    buf = str(exe) if exe.exists() else shutil.which("buf")
    assert buf, "buf is not installed: it comes with the dev extra"
    bin_dir = tmp_path / "node_modules" / ".bin"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}  # what npx does
    done = subprocess.run([buf, "generate"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return yaml, code, env, bin_dir


#: tsc's settings for a Node.js ES module project, strict: what the section's notes assume
#: ("moduleResolution": "nodenext" needs import_extension=js).
_TSCONFIG = {"compilerOptions": {"target": "es2022", "module": "nodenext", "moduleResolution": "nodenext",
                                 "strict": True, "noEmit": True, "types": ["node"]},
             "include": ["web/src/**/*.ts"]}


def test_typescript_snippets_type_check(tmp_path):
    """The section's two TypeScript snippets compile with ``tsc`` (strict, nodenext) against
    the code its buf.gen.yaml generates: ``tsx`` runs them without checking a type, so a
    renamed field, a ``number`` where protobuf-es has a ``bigint`` or an API that Connect
    renamed passed the run and failed the reader's build. The resume loop continues the
    client (its ``api``, ``matchId``, ``headers``): it is checked after the client's lines up
    to the client's own loop."""
    _, code, env, bin_dir = _ts_project(tmp_path)
    section = API[API.index("### TypeScript with protobuf-es and Connect"):].split("\n### ", 1)[0]
    resume = re.findall(r"```ts\n(.*?)```", section, re.DOTALL)[1]
    prelude = code.split("\nlet acted", 1)[0]
    assert "const headers" in prelude and "\nfor await" not in prelude
    (tmp_path / "web" / "src" / "play.ts").write_text(code)
    (tmp_path / "web" / "src" / "resume.ts").write_text(f"{prelude}\n{resume}")
    (tmp_path / "tsconfig.json").write_text(json.dumps(_TSCONFIG))
    done = subprocess.run([str(bin_dir / "tsc"), "-p", "."], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_typescript_snippet_runs(engine, tmp_path):
    """docs/api.md's TypeScript section as written: ``buf generate`` with its buf.gen.yaml and
    @bufbuild/protoc-gen-es, then its client with tsx against a real engine: a whole Japanese
    Joker match against a bot, a stale action's ErrorInfo and View decoded with
    ConnectError.findDetails, the deals' results from the ListValue, the reveal. The npm
    packages are clients/ts's, installed from its lock file (``npm ci``) when missing."""
    _, code, env, bin_dir = _ts_project(tmp_path)
    (tmp_path / "web" / "src" / "play.ts").write_text(code.replace("127.0.0.1:50051", engine.target))
    done = subprocess.run([str(bin_dir / "tsx"), "web/src/play.ts"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.strip().splitlines()
    assert re.fullmatch(r"Aborted STALE_SEQUENCE \d+ true true true", lines[0]), lines[0]
    deals = [line for line in lines if line.startswith("deal ")]
    assert deals and all(set(json.loads(line.split(" ", 2)[2])) >= {"trump", "taken", "scores"} for line in deals)
    assert lines[-2].startswith("result ") and json.loads(lines[-2][len("result "):])["outcome"] == "completed"
    assert lines[-1] == f"revealed {len(deals)} deals"


_TWO_AUTHORIZATIONS = r"""
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const def = protoLoader.loadSync(['cardgames/v1/card_games.proto'], {
  includeDirs: [process.argv[2]], keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true,
});
const { cardgames } = grpc.loadPackageDefinition(def);
const api = new cardgames.v1.CardGamesService(process.argv[3], grpc.credentials.createInsecure());
const unary = (method, request, md) => new Promise((resolve) => api[method](request, md || new grpc.Metadata(),
  { deadline: Date.now() + 10000 }, (err, res) => resolve(err ? { code: err.code, details: err.details,
    trailer: err.metadata.get('grpc-status-details-bin').length } : res)));
(async () => {
  const { match } = await unary('CreateMatch', { game: 'japanese_joker', seats: [{ open: {} }, { open: {} }] });
  const joined = await unary('JoinMatch', { match_id: match.match_id, client_join_id: 'two-authorizations-0001' });
  const md = new grpc.Metadata();
  md.set('authorization', `Bearer ${joined.seat_token}`);
  const watch = api.WatchMatch({ match_id: match.match_id }, md);
  const watched = new Promise((resolve) => {
    watch.on('data', () => {});
    watch.on('error', (err) => resolve({ code: err.code, details: err.details }));
  });
  await new Promise((resolve) => watch.once('data', resolve));  // the stream is open: its SNAPSHOT came
  const once = await unary('GetView', { match_id: match.match_id }, md);  // one value: the seat's view
  md.add('authorization', `Bearer ${joined.seat_token}`);  // the same Metadata, the token added again
  const twice = await unary('GetView', { match_id: match.match_id }, md);
  const stream = await Promise.race([watched, new Promise((r) => setTimeout(() => r('still open'), 5000))]);
  console.log(JSON.stringify({ once: once.view.seat, twice, stream }));
  process.exit(0);
})();
"""


def test_grpc_js_refuses_two_authorization_values_as_the_node_section_says(engine, node):
    """docs/api.md's Connecting table says two ``authorization`` headers are UNAUTHENTICATED /
    MALFORMED_TOKEN, which is the engine's answer, but a grpc-js client never gets it: a
    ``Metadata`` that holds the token twice (``md.add`` on one reused from an earlier call) is
    refused by grpc-js itself, ``INTERNAL`` without details, and grpc-js drops the channel's
    connection with it, ending the seat's open WatchMatch stream (``UNAVAILABLE``). The Node.js
    section says so, in the words grpc-js uses."""
    with tempfile.TemporaryDirectory() as workdir:
        program = Path(workdir) / "two_authorizations.js"
        program.write_text(_TWO_AUTHORIZATIONS)
        result = subprocess.run([node, str(program), str(ROOT / "proto"), engine.target], capture_output=True,
                                text=True, timeout=60, env={**os.environ, "NODE_PATH": str(NODE_MODULES)})
    assert result.returncode == 0, result.stdout + result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["once"] == 0
    twice, stream = out["twice"], out["stream"]
    assert twice["code"] == 13 and twice["trailer"] == 0  # INTERNAL, no google.rpc.Status: not the engine's
    assert stream != "still open" and stream["code"] == 14  # UNAVAILABLE: the connection went with it
    section = API[API.index("### Node.js with @grpc/proto-loader"):]
    said = " ".join(section.split())
    assert "grpc-js never sends two: [Node.js](#nodejs-with-grpcproto-loader)" in API
    assert f"with `INTERNAL` `{twice['details']}` and no details" in said
    assert f"end with `UNAVAILABLE` `{stream['details']}`" in said


_CONNECT_TLS = """
import { readFileSync } from "node:fs";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { CardGamesService } from "./gen/cardgames/v1/card_games_pb.js";

async function games(pem: Buffer, name: string, url: string): Promise<string> {
  const transport = TRANSPORT;
  try {
    const { games } = await createClient(CardGamesService, transport).listGames({}, { timeoutMs: 20_000 });
    return `ok ${games.length > 0}`;
  } catch (err) {
    const e = ConnectError.from(err);
    return `${Code[e.code]} ${e.rawMessage}`;
  }
}
const [ca, other] = [readFileSync(process.argv[2]), readFileSync(process.argv[3])];
const url = `https://${process.argv[4]}`;
for (const line of [await games(ca, "engine.test", url), await games(other, "engine.test", url),
                    await games(ca, "wrong.test", url), await games(ca, "engine.test", url.replace("https:", "http:"))])
  console.log(line);
"""


def test_connect_reaches_a_tls_engine_as_the_connecting_section_says(tmp_path):
    """docs/api.md's Connecting table named the TLS options of every client but Connect's, which
    its TypeScript section uses: its ``createGrpcTransport`` call, with a private CA and a
    server name, reaches an engine serving TLS; the CA of another certificate and a name the
    certificate is not for are ``Code.Internal`` with the TLS error, and a plain ``http`` URL
    to the TLS port is ``Code.Canceled``, as the table says (grpc-js and Python: UNAVAILABLE)."""
    row = next(line for line in API.splitlines() if line.startswith("| TLS |"))
    (call,) = re.findall(r"`(createGrpcTransport\(\{ baseUrl: \"https://host:50051\".*?\}\))`", row)
    assert "Connect's `createGrpcTransport`: `Code.Canceled`" in row and "Connect: `Code.Internal`" in row
    openssl = shutil.which("openssl")
    assert openssl, "openssl is needed to make a test certificate"
    certs = {}
    for name in ("engine", "other"):
        key, cert = tmp_path / f"{name}-key.pem", tmp_path / f"{name}.pem"
        subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                        str(cert), "-days", "1", "-subj", f"/CN={name}.test", "-addext",
                        f"subjectAltName=DNS:{name}.test"], check=True, capture_output=True)
        certs[name] = (cert, key)
    _, _, env, bin_dir = _ts_project(tmp_path)
    transport = call.replace('"https://host:50051"', "url")  # pem and name are the function's parameters
    (tmp_path / "web" / "src" / "tls.ts").write_text(_CONNECT_TLS.replace("TRANSPORT", transport))
    with LocalService(args=["--tls-cert", str(certs["engine"][0]), "--tls-key", str(certs["engine"][1])]) as service:
        done = subprocess.run([str(bin_dir / "tsx"), "web/src/tls.ts", str(certs["engine"][0]), str(certs["other"][0]),
                               service.target], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    trusted, other_ca, wrong_name, plain = done.stdout.strip().splitlines()
    assert trusted == "ok true"
    assert other_ca.startswith("Internal ") and "certificate" in other_ca, other_ca
    assert wrong_name.startswith("Internal ") and "altnames" in wrong_name, wrong_name
    assert plain.startswith("Canceled "), plain


def test_the_json_form_leaves_out_zero_values_but_set_optional_ones_as_the_names_note_says():
    """"Reading the messages": the protobuf JSON form (buf curl, protobuf-es' toJson) leaves out a
    field at its zero value, but not an ``optional`` field that is set: it said "every field",
    and a reader who took a missing "seat" for seat 0 met ``"seat": 0`` in seat 0's view. The
    note's examples, written by protobuf's own JSON printer (the same proto3 JSON mapping)."""
    from google.protobuf import json_format

    from engine_service.transport.generated import match_pb2

    section = API[API.index("### Reading the messages in any language"):]
    names = section.split("* **Zero values.**", 1)[0]
    absent = re.findall(r'`"(\w+)": (?:0|false)`', names.split(" are absent", 1)[0])
    present = re.findall(r'`"(\w+)": 0`', names.split(" are absent", 1)[1])
    assert absent == ["dealer", "over"] and present == ["seat", "toAct"], (absent, present)
    view = json_format.MessageToDict(match_pb2.View(seat=0, to_act=0, dealer=0, over=False))
    assert not set(absent) & set(view)
    assert all(view[name] == 0 for name in present), view


def test_python_refuses_an_untrusted_certificate_as_the_connecting_section_says(tmp_path):
    """The Connecting table: a Python client that does not trust the engine's certificate (the
    CA of another one, or a name it is not for) gets UNAVAILABLE with the TLS error the table
    quotes, and so does a plain client; the table said only the last."""
    import asyncio

    from clients import cardgames_client as cg

    from .conftest import run, self_signed_certificate

    row = next(line for line in API.splitlines() if line.startswith("| TLS |"))
    (python_errors,) = re.findall(r'Python: ("[^;]*");', row)
    quoted = re.findall(r'"([^"]+)"', python_errors)
    assert len(quoted) == 2, python_errors
    cert, key = self_signed_certificate(tmp_path)
    (tmp_path / "other").mkdir()
    other, _ = self_signed_certificate(tmp_path / "other")  # another certificate, for the same names

    async def refusal(**options) -> str:
        async with cg.connect(service.target, timeout_s=30, retry=cg.RetryPolicy(attempts=1), **options) as client:
            with pytest.raises(cg.CardGamesError) as refused:
                await asyncio.wait_for(client.list_games(), 60)
            assert refused.value.code.name == "UNAVAILABLE", refused.value
            return str(refused.value)

    with LocalService(args=["--tls-cert", str(cert), "--tls-key", str(key)]) as service:
        async def scenario():
            assert quoted[0] in await refusal(tls=True, root_certificates=other.read_bytes(), server_name="localhost")
            assert quoted[1] in await refusal(tls=True, root_certificates=cert.read_bytes(), server_name="wrong.test")
            await refusal()  # plain
        run(scenario())
