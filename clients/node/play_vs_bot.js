#!/usr/bin/env node
'use strict';
/**
 * Create a match against bots, play it to the end and print the result.
 *
 *   node play_vs_bot.js --target 127.0.0.1:50051 --game klaberjass --bot random \
 *       [--option name=value]... [--policy first|random] [--seed N] [--quiet] \
 *       [--tls] [--ca FILE] [--server-name NAME] [--reconnect-tries N]
 *
 * --tls connects with TLS (the system's root certificates), --ca FILE trusts the PEM
 * certificate(s) of a private CA instead (and implies --tls), --server-name NAME verifies the
 * engine's certificate for NAME rather than the target's host (as clients.remote_bot and the
 * terminal clients). The engine may go away for a while (a restart, a network drop): the
 * stream is reopened and a turn whose submit found no engine is decided again on the current
 * view, --reconnect-tries times in a row at most (default 30, as the terminal clients; each
 * try waits out a backoff, so about a minute and more of outage), each drop and return
 * written on stderr.
 *
 * The client takes seat 0 and fills the others with the bot. It follows the match on its
 * WatchMatch stream (the view after each event says whose turn it is and carries the legal
 * actions), answers each of its turns with SubmitAction (expected_seq + client_action_id), and
 * prints one JSON line at the end:
 *   {"match_id": ..., "game": ..., "status": "MATCH_STATUS_FINISHED", "seat": 0,
 *    "winners": [...], "totals": ..., "actions": N, "deals_verified": D}
 * where D is the number of deals whose revealed deck matched the commitment published when it
 * was dealt (fair dealing, docs/api.md); a mismatch is an error.
 * Exit status 0 when the match finished, 1 on an error (printed with its code and reason),
 * 2 on a usage error (an unknown or incomplete argument, a target without its port, --seed
 * with --policy first, a --ca file that holds no certificate: one line and the usage, no stack).
 */

const USAGE = 'usage: node play_vs_bot.js [--target HOST:PORT] [--game GAME] [--bot BOT] '
  + '[--option name=value]... [--policy first|random] [--seed N] [--quiet] '
  + '[--tls] [--ca FILE] [--server-name NAME] [--reconnect-tries N]\n'
  + '  defaults: --target 127.0.0.1:50051 --game klaberjass --bot random --policy random --seed 1 '
  + '--reconnect-tries 30\n';

/** A mistake on the command line (parseArgs): main prints it with the usage, exit status 2. */
class UsageError extends Error {}

const crypto = require('node:crypto');
const fs = require('node:fs');
const { Client, CardGamesError, verifyDeal, PACKS, TRANSIENT, RECONNECTING, RESUMED } = require('./cardgames');

/** The terminal clients' --reconnect-tries default. */
const RECONNECT_TRIES = 30;

/**
 * The error for an argument parseArgs does not know, naming a flag but never a value (as the
 * Python clients and the engine say it, engine_service/command_line.py's unrecognized): a
 * stray word, the value of `--flag=VALUE`, or what follows the letter of `-xVALUE` (a short
 * option's value may follow it directly), may be a secret pasted at the wrong place (a seat
 * token, whose URL-safe base64 may start with '-'), and the error line goes to a terminal or
 * a CI log.
 */
function unknownArgument(arg) {
  if (arg.startsWith('-') && arg !== '-') {
    const name = arg.startsWith('--') ? arg.split('=')[0] : arg.slice(0, 2);
    return name === arg ? `unknown argument ${arg}` : `unknown argument ${name} (its value not shown: it may hold a secret)`;
  }
  return 'unexpected value (not shown: it may hold a secret)';
}

/** gRPC's own target schemes (`unix:/run/engine.sock`, `dns:engine`): no port follows them. */
const GRPC_SCHEMES = new Set(['dns', 'unix', 'unix-abstract', 'ipv4', 'ipv6', 'vsock', 'xds', 'google-c2p']);

/**
 * What is wrong with `target` (host:port), or null, as the Python clients check it
 * (clients/cardgames_client.py, _target_problem): grpc-js threw an uncaught "Could not parse
 * target name" for an empty one (a stack trace, exit status 1), and failed `host:`, a port
 * above 65535 and one that is no number (`host:http`, `host:-1`) as UNAVAILABLE, as if the
 * engine were down. The text after the last ':' is a port after a host without a ':' of its
 * own or in brackets (`[::1]:50051`) that is not a scheme; a bare IPv6 address ends with a
 * group of at most four digits.
 */
function targetProblem(target) {
  const example = '(host:port, e.g. 127.0.0.1:50051)';
  if (!target.trim()) return `the target is empty ${example}`;
  if (target.endsWith(':')) return `${JSON.stringify(target)} has no port after its ':' ${example}`;
  const at = target.lastIndexOf(':');
  const host = target.slice(0, at);
  const port = target.slice(at + 1);
  const digits = /^[0-9]+$/.test(port);
  if (at >= 0 && digits && Number(port) > 65535) return `${JSON.stringify(target)} has port ${port}, above 65535 ${example}`;
  const hostPort = at >= 0 && (!host.includes(':') || (host.startsWith('[') && host.endsWith(']')));
  if (!hostPort || GRPC_SCHEMES.has(host.toLowerCase()) || (digits && Number(port) > 0)) return null;
  return `${JSON.stringify(target)} has port ${digits ? port : JSON.stringify(port)}, not a number from 1 to 65535 ${example}`;
}

/** The flags that take no value. */
const SWITCHES = new Set(['--quiet', '--tls', '-h', '--help']);

function parseArgs(argv) {
  const args = {
    target: '127.0.0.1:50051', game: 'klaberjass', bot: 'random', options: {}, policy: 'random', seed: 1, quiet: false,
    tls: false, ca: undefined, serverName: undefined, reconnectTries: RECONNECT_TRIES,
  };
  let seedGiven = false;
  for (let i = 0; i < argv.length; i += 1) {
    // --flag=VALUE as --flag VALUE, as the Python clients take it: it was an "unknown argument"
    const at = argv[i].startsWith('--') ? argv[i].indexOf('=') : -1;
    const flag = at < 0 ? argv[i] : argv[i].slice(0, at);
    const value = () => {
      if (at >= 0) return argv[i].slice(at + 1);
      if (i + 1 >= argv.length) throw new UsageError(`${flag} needs a value`);
      i += 1;
      return argv[i];
    };
    if (at >= 0 && SWITCHES.has(flag)) throw new UsageError(`${flag} takes no value (not shown: it may hold a secret)`);
    if (flag === '--target') {
      args.target = value();
      const problem = targetProblem(args.target);
      if (problem) throw new UsageError(`--target: ${problem}`);
    }
    else if (flag === '--game') args.game = value();
    else if (flag === '--bot') args.bot = value();
    else if (flag === '--policy') args.policy = value();
    else if (flag === '--seed') {
      seedGiven = true;
      const text = value();
      // digits only: Number() took '' and ' ' for 0, '0x10' for 16 and '1e3' for 1000, so a
      // seed left out of a script's variable ran as --seed 0 without a word
      if (!/^[+-]?[0-9]+$/.test(text)) throw new UsageError(`--seed wants a whole number, not ${JSON.stringify(text)}`);
      args.seed = Number(text);
    } else if (flag === '--quiet') args.quiet = true;
    else if (flag === '--tls') args.tls = true;
    else if (flag === '--ca') args.ca = value();
    else if (flag === '--server-name') args.serverName = value();
    else if (flag === '--reconnect-tries') {
      const text = value();
      args.reconnectTries = Number(text);
      if (!/^[0-9]+$/.test(text) || args.reconnectTries < 1) {
        throw new UsageError(`--reconnect-tries wants a whole number above 0, not ${JSON.stringify(text)}`);
      }
    }
    else if (flag === '-h' || flag === '--help') args.help = true;
    else if (flag === '--option') {
      const text = value();
      const at = text.indexOf('=');
      if (at < 1) throw new UsageError('--option wants name=value');
      const name = text.slice(0, at);
      // the same option twice kept the last value without a word; refused, as the Python
      // clients (clients.play, clients.remote_bot) and the arena's --options refuse it
      if (Object.hasOwn(args.options, name)) {
        throw new UsageError(`--option: the option ${JSON.stringify(name)} is given twice: give it once`);
      }
      // defined, not assigned: `__proto__=x` assigned set the object's prototype (to nothing,
      // a string), and the option vanished without a word instead of being refused by name
      Object.defineProperty(args.options, name, { value: text.slice(at + 1), enumerable: true, writable: true,
                                                  configurable: true });
    } else throw new UsageError(unknownArgument(argv[i]));
  }
  if (!['first', 'random'].includes(args.policy)) throw new UsageError('--policy is first or random');
  // it was dropped without a word (as clients.play's --seed without --autoplay random)
  if (seedGiven && args.policy !== 'random') throw new UsageError('--seed seeds the choices of --policy random');
  return args;
}

/** The --ca file's largest size: a PEM bundle of a few CAs is a few kB (as the Python clients). */
const PEM_LIMIT = 1024 * 1024;

/**
 * The PEM certificates of --ca, checked as the Python clients check them
 * (read_root_certificates): a UsageError naming the file when it cannot be read, is no regular
 * file or is larger than PEM_LIMIT (it was read whole: /dev/zero filled the memory), or holds no
 * certificate (grpc-js took any bytes as root certificates, and every call then failed as a TLS
 * error naming the engine).
 */
function readRootCertificates(path) {
  let pem;
  try {
    const stat = fs.statSync(path);
    if (!stat.isFile()) throw new UsageError(`the CA file ${path}: not a regular file`);
    if (stat.size > PEM_LIMIT) throw new UsageError(`the CA file ${path}: larger than 1 MiB`);
    pem = fs.readFileSync(path);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`cannot read the CA file ${path}: ${error.code || error.message}`);
  }
  const blocks = pem.toString('latin1').match(/-----BEGIN CERTIFICATE-----[^-]*-----END CERTIFICATE-----/g) || [];
  const parses = (block) => {
    try {
      return Boolean(new crypto.X509Certificate(block));
    } catch {
      return false;
    }
  };
  if (!blocks.length || !blocks.every(parses)) {
    throw new UsageError(`the CA file ${path} holds no usable PEM certificate ('-----BEGIN CERTIFICATE-----' blocks)`);
  }
  return pem;
}

/** A small deterministic generator (mulberry32), so --seed repeats a run's choices. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * google.protobuf.Value / Struct as decoded by proto-loader -> plain JavaScript. The bundled
 * well-known types keep protobufjs' camelCase names (numberValue), so the oneof's `kind`
 * names the member that is set.
 */
function fromValue(value) {
  if (!value || !value.kind) return null;
  const inner = value[value.kind];
  switch (value.kind) {
    case 'structValue':
    case 'struct_value':
      return fromStruct(inner);
    case 'listValue':
    case 'list_value':
      return ((inner && inner.values) || []).map(fromValue);
    case 'nullValue':
    case 'null_value':
      return null;
    default:
      return inner;
  }
}

function fromStruct(struct) {
  const out = {};
  for (const [key, value] of Object.entries((struct && struct.fields) || {})) out[key] = fromValue(value);
  return out;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `call()` again while it fails without an answer from the engine (UNAVAILABLE or a timeout,
 * after the client's own ten tries of about 5 s), `tries` times in a row at most, a second
 * apart: the client's own retries alone gave up after about 5 s of outage, ending the match
 * for this seat (exit status 1) while its stream would have come back. `call` is given the
 * try's number (1, 2...), so that a retried decision reads the current view first.
 */
async function throughOutages(call, { tries, log, what }) {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await call(attempt);
    } catch (error) {
      if (!(error instanceof CardGamesError) || !TRANSIENT.has(error.code) || attempt >= tries) throw error;
      log(`${what} failed: ${error.code} (engine unreachable); trying again (${attempt} of ${tries})`);
      await sleep(1000);
    }
  }
}

/** Table option values typed by the game's OptionSpec (ListGames). */
function typedOptions(game, raw) {
  const out = {};
  for (const [name, text] of Object.entries(raw)) {
    const spec = game.options.find((o) => o.name === name);
    if (!spec) throw new Error(`${game.id} has no option ${name}`);
    // checked here: 'yes' or 'True' was sent as false, '300x' as 300 and 'abc' as the string
    // 'NaN', so a typo played a match with another value than the one asked for
    if (spec.type === 'OPTION_TYPE_BOOL') {
      if (text !== 'true' && text !== 'false') throw new Error(`option ${name} is true or false, not ${JSON.stringify(text)}`);
      out[name] = text === 'true';
    } else if (spec.type === 'OPTION_TYPE_INT') {
      if (!/^[+-]?[0-9]+$/.test(text)) throw new Error(`option ${name} is a whole number, not ${JSON.stringify(text)}`);
      out[name] = Number(text);
    } else out[name] = text;
  }
  return out;
}

async function main() {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (error) {
    // a typo on the command line was an uncaught exception: a stack trace, exit status 1
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`error: ${error.message}\n${USAGE}`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  let rootCertificates;
  if (args.ca) {
    try {
      rootCertificates = readRootCertificates(args.ca);
    } catch (error) {
      if (!(error instanceof UsageError)) throw error;
      process.stderr.write(`error: ${error.message}\n${USAGE}`);
      return 2;
    }
  }
  const client = new Client(args.target, { tls: args.tls, rootCertificates, serverName: args.serverName });
  const log = args.quiet ? () => {} : (line) => process.stderr.write(`${line}\n`);
  const patiently = (what, call) => throughOutages(call, { tries: args.reconnectTries, log, what });
  // the drop and the return of the stream, a line each (as the terminal clients' --autoplay)
  const onConnection = ({ state, attempt, maxAttempts, error }) => {
    if (state === RECONNECTING && attempt === 1) {
      log(`connection lost (${error ? error.code : 'stream ended'}); reconnecting (up to ${maxAttempts} tries)`);
    } else if (state === RESUMED) log(`connection back (try ${attempt})`);
  };
  try {
    const games = await client.listGames();
    const game = games.find((g) => g.id === args.game);
    if (!game) throw new Error(`unknown game ${args.game}; games: ${games.map((g) => g.id).join(', ')}`);
    const seats = [null, ...Array(game.num_seats - 1).fill(args.bot)];
    const match = await client.createMatch(game.id, { seats, options: typedOptions(game, args.options), name: 'node client' });
    const me = await client.join(match.match_id, { seat: 0, playerName: 'node' });
    log(`match ${match.match_id}: ${game.name}, seat 0 against ${args.bot}`);

    const random = rng(args.seed);
    const decide = (view) => {
      const legal = view.legal_actions.map((a) => a.notation);
      return args.policy === 'first' ? legal[0] : legal[Math.floor(random() * legal.length)];
    };
    let actions = 0;
    // The newest seq this seat knows of. Events queue up while it decides (the bot answers at
    // once), so an event older than its own last action carries a view that is out of date.
    let newest = -1;
    // Every deal's commitment as the views published it while the match was played: the reveal
    // is checked against these, not against what the server says at the end.
    const committed = new Map();
    // From seq 0: the seat was taken at seq 0 (a match starts when its last seat is taken), so
    // the log shows every action, a bot's first move before this stream opened included.
    for await (const event of me.watch(0, { maxFailures: args.reconnectTries, onConnection })) {
      if (event.kind === 'EVENT_KIND_ACTION') {
        log(`${String(event.seq).padStart(4)} seat ${event.seat} (${event.by}): ${event.action.notation}`);
      }
      if (event.kind === 'EVENT_KIND_MATCH_ENDED') break;
      // a SNAPSHOT is the match as it stands: restored from a backup, it went back
      if (event.kind === 'EVENT_KIND_SNAPSHOT') newest = Math.min(newest, event.seq || 0);
      const view = event.view;
      if (view && view.deal_commitment) {
        const deal = view.deal_number || 0;
        if (committed.has(deal) && committed.get(deal) !== view.deal_commitment) {
          throw new Error(`deal ${deal}: the commitment changed during the match`);
        }
        committed.set(deal, view.deal_commitment);
      }
      if (view && (view.seq || 0) >= newest && view.to_act === me.seat && !view.over) {
        // a retried turn decides on the current view (GetView): the lost submit may have
        // been applied, or the match moved on meanwhile
        const reply = await patiently('submit', (attempt) => me.act(decide, attempt === 1 ? view : undefined));
        if (reply) {
          actions += 1;
          newest = Number(reply.seq || 0);
        }
      }
    }
    const summary = await patiently('GetMatch', () => client.getMatch(match.match_id));
    const result = fromStruct(summary.result);
    // fair dealing: every deck revealed now matches the commitment published when it was dealt
    const reveals = await patiently('RevealDeals', () => client.revealDeals(match.match_id, me.token));
    const commitments = summary.deal_commitments || [];
    const unfair = reveals.filter((r) => !verifyDeal(r, committed.get(r.deal || 0), { pack: PACKS[game.id] }));
    if (unfair.length || reveals.length !== commitments.length || commitments.some((c, d) => c !== committed.get(d))) {
      throw new Error(`the revealed decks do not match their commitments (deals ${unfair.map((r) => r.deal || 0)})`);
    }
    process.stdout.write(`${JSON.stringify({
      match_id: summary.match_id, game: summary.game, status: summary.status, seat: me.seat,
      winners: result.winners, totals: result.totals, outcome: result.outcome, actions,
      deals_verified: reveals.length,
    })}\n`);
    return summary.status === 'MATCH_STATUS_FINISHED' ? 0 : 1;
  } catch (error) {
    // a CardGamesError's message starts with its code and reason already
    process.stderr.write(`error: ${error.message}\n`);
    return 1;
  } finally {
    client.close();
  }
}

if (require.main === module) {
  main().then((code) => { process.exitCode = code; });
}

module.exports = { parseArgs, readRootCertificates, fromStruct, typedOptions, throughOutages, UsageError };
