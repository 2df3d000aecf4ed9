'use strict';
/**
 * A small Node.js client of the card-game engine (package cardgames.v1), over @grpc/grpc-js
 * with the .proto files loaded at run time by @grpc/proto-loader (no code generation step).
 *
 * What it adds to the raw stubs, as the Python library does (docs/api.md):
 *  - promises for the unary calls, with the seat token sent as "authorization: Bearer ...";
 *  - creates, joins and submits retried safely after a lost answer (client_create_id,
 *    client_join_id, client_action_id);
 *  - every call refused by the engine's rate limits (RESOURCE_EXHAUSTED, reason RATE_LIMITED:
 *    nothing was done) sent again after the delay its google.rpc.RetryInfo names, within the
 *    10 tries of a call (a delay over 30 s is thrown at once);
 *  - errors as CardGamesError with the status code name, the google.rpc.ErrorInfo reason and,
 *    for ABORTED (stale sequence), the caller's current View decoded from the status details;
 *  - watch(): the WatchMatch stream as an async iterator that reopens itself with after_seq
 *    after a dropped connection (INTERNAL or UNKNOWN too, 3 times in a row at most), so every
 *    ACTION event is seen exactly once; a stream that dropped while its view was still WAITING
 *    is reopened without after_seq (a SNAPSHOT first), since the match's start is no action
 *    and would not be replayed; its onConnection hook tells the caller while the stream is
 *    down ('reconnecting'), back ('resumed') or given up ('gave_up'), as the Python library's.
 */

const path = require('node:path');
const fs = require('node:fs');
const crypto = require('node:crypto');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const protobuf = require('protobufjs');

/** proto/ of the repository (cardgames/v1/*.proto) and this folder's google/rpc subset. */
const PROTO_DIRS = [
  process.env.CARDGAMES_PROTO_DIR || path.resolve(__dirname, '..', '..', 'proto'),
  path.resolve(__dirname, 'proto'),
];
const API_FILES = ['cardgames/v1/card_games.proto', 'cardgames/v1/admin.proto'];

const LOADER_OPTIONS = {
  keepCase: true, // field names as in the .proto files: match_id, legal_actions...
  longs: Number, // int64 seq numbers fit in a double for any real match
  enums: String, // enum values by name: "EVENT_KIND_ACTION"
  // proto3 `optional` fields (to_act, seat, winner) are undefined when unset and 0 when set to 0;
  // without defaults a zero in a plain field (seq 0) comes back undefined too: read it as `?? 0`
  defaults: false,
  arrays: true, // ... but repeated fields are always arrays
  oneofs: true,
  includeDirs: PROTO_DIRS,
};

const packageDefinition = protoLoader.loadSync(API_FILES, LOADER_OPTIONS);
const api = grpc.loadPackageDefinition(packageDefinition).cardgames.v1;

/** protobufjs root for decoding status details (google.rpc.Status, ErrorInfo, View). */
const detailsRoot = (() => {
  const root = new protobuf.Root();
  root.resolvePath = (origin, target) => {
    if (target.startsWith('google/protobuf/')) return target; // bundled with protobufjs
    for (const dir of PROTO_DIRS) {
      const candidate = path.join(dir, target);
      if (fs.existsSync(candidate)) return candidate;
    }
    return protobuf.util.path.resolve(origin, target);
  };
  root.loadSync(['google/rpc/status.proto', 'cardgames/v1/match.proto'], { keepCase: true });
  return root;
})();
const StatusType = detailsRoot.lookupType('google.rpc.Status');

const CONVERSION = { longs: Number, enums: String, defaults: false, arrays: true, oneofs: true };

class CardGamesError extends Error {
  /**
   * @param {string} code gRPC status code name (FAILED_PRECONDITION, ABORTED...)
   * @param {string} message the server's message
   * @param {string} reason ErrorInfo reason (ILLEGAL_ACTION, STALE_SEQUENCE...), '' if none
   * @param {object} metadata ErrorInfo metadata
   * @param {object|undefined} view the caller's current View (ABORTED only)
   * @param {number|undefined} retryDelayMs RATE_LIMITED: the RetryInfo delay before a retry
   * @param {string} requestId the call's id in the engine's logs (RequestInfo), '' if none;
   *   an INTERNAL error's message names it
   */
  constructor(code, message, reason, metadata, view, retryDelayMs, requestId = '') {
    super(`${code}${reason ? ' ' + reason : ''}: ${message}`
      + (requestId && code === 'INTERNAL' ? ` (request ${requestId})` : ''));
    this.name = 'CardGamesError';
    this.code = code;
    this.reason = reason;
    this.metadata = metadata;
    this.view = view;
    this.retryDelayMs = retryDelayMs;
    this.requestId = requestId;
  }
}

const CODE_NAMES = Object.fromEntries(Object.entries(grpc.status).map(([name, value]) => [value, name]));

/** The protobufjs type of a status detail, or null for one this client does not know. */
function knownType(typeName) {
  try {
    return detailsRoot.lookupType(typeName);
  } catch (error) {
    return null;
  }
}

/** A CardGamesError for a grpc-js error, with the rich status details decoded. */
function toCardGamesError(error) {
  const code = CODE_NAMES[error.code] || 'UNKNOWN';
  let reason = '';
  let metadata = {};
  let view;
  let retryDelayMs;
  let requestId = '';
  const raw = error.metadata && error.metadata.get('grpc-status-details-bin')[0];
  if (raw) {
    const status = StatusType.toObject(StatusType.decode(raw), CONVERSION);
    for (const detail of status.details) {
      const typeName = detail.type_url.split('/').pop();
      const type = knownType(typeName);
      if (!type) continue; // a detail this client does not know (v1 may add some)
      const value = type.toObject(type.decode(detail.value), CONVERSION);
      if (typeName === 'google.rpc.ErrorInfo') {
        reason = value.reason || '';
        metadata = value.metadata || {};
      } else if (typeName === 'cardgames.v1.View') {
        view = value;
      } else if (typeName === 'google.rpc.RetryInfo') {
        const delay = value.retry_delay || {};
        retryDelayMs = (delay.seconds || 0) * 1000 + (delay.nanos || 0) / 1e6;
      } else if (typeName === 'google.rpc.RequestInfo') {
        requestId = value.request_id || '';
      }
    }
  }
  return new CardGamesError(code, error.details || error.message, reason, metadata, view, retryDelayMs,
    requestId);
}

// Failed without an answer: repeated as it was (a submit keeps its client_action_id), DRAINING
// included (docs/api.md: "retry with backoff"; the draining engine's successor serves it).
const TRANSIENT = new Set(['UNAVAILABLE', 'DEADLINE_EXCEEDED']);
// Tries of a call that is safe to repeat: enough to outlast an engine restart (about 5 s of
// backoff in all, as the Python library's RetryPolicy; 4 gave up within 0.7 s, so a submit
// during a restart failed while watch() resumed).
const ATTEMPTS = 10;
// A call the engine's rate limits refused did nothing: repeated after the RetryInfo delay (the
// time until the caller's bucket has a call again; sooner is refused again), within ATTEMPTS.
// A longer delay than this is thrown at once, for the caller to decide (as Python's
// RetryPolicy.max_rate_limit_wait_s).
const MAX_RATE_LIMIT_WAIT_MS = 30000;
const rateLimited = (failure) => failure.code === 'RESOURCE_EXHAUSTED' && failure.reason === 'RATE_LIMITED';
const RESUMABLE = new Set(['UNAVAILABLE', 'DEADLINE_EXCEEDED', 'CANCELLED']);
// Codes that a broken HTTP/2 stream (RST_STREAM) can also end with: resumed too, but only 3
// times in a row without an event in between (as the Python library), since a server bug
// would produce them forever.
const MAYBE_RESUMABLE = new Set(['INTERNAL', 'UNKNOWN']);
const MAX_UNCLEAR_FAILURES = 3;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** The states of watch()'s onConnection hook (clients/cardgames_client.py's StreamState). */
const RECONNECTING = 'reconnecting';
const RESUMED = 'resumed';
const GAVE_UP = 'gave_up';
const backoff = (attempt) => Math.random() * Math.min(2000, 100 * 2 ** attempt);

const OPTION_VALUE_FIELDS = ['string_value', 'int_value', 'bool_value'];

/**
 * A table option's OptionValue: a boolean, an integer or a string as it is, or an OptionValue
 * of ListGames (OptionSpec.default_value, an allowed_values entry) sent back as it is, as
 * docs/api.md says one can. Anything else is a TypeError here: String() of an object sent
 * "[object Object]", which the server refused as an invalid value naming no mistake.
 */
function optionValue(name, value) {
  if (typeof value === 'boolean') return { bool_value: value };
  if (Number.isInteger(value)) return { int_value: value };
  if (typeof value === 'string') return { string_value: value };
  if (value && typeof value === 'object') {
    const set = OPTION_VALUE_FIELDS.filter((field) => value[field] !== undefined && value[field] !== null);
    // with the loader's `oneofs: true` the `value` key names the member that is set
    const member = set.includes(value.value) ? [value.value] : set;
    if (member.length === 1) return { [member[0]]: value[member[0]] };
  }
  const shown = typeof value === 'number' ? String(value) : JSON.stringify(value); // NaN, not null
  throw new TypeError(`option ${name}: ${shown} is not a boolean, an integer, a string `
    + 'nor an OptionValue of ListGames ({int_value: 500})');
}

/** The keys of createMatch's spec. */
const CREATE_SPEC_KEYS = new Set(['seats', 'options', 'turnTimeS', 'name', 'listed', 'spectatorsAllowed',
  'spectatorDelayActions', 'clientCreateId']);
/** The keys of join's options. */
const JOIN_SPEC_KEYS = new Set(['seat', 'playerName', 'clientJoinId']);
/** The keys of the Client's options. */
const CLIENT_OPTION_KEYS = new Set(['tls', 'rootCertificates', 'serverName', 'timeoutMs', 'backoffMs']);

class Client {
  /**
   * @param {string} target host:port
   * @param {{tls?: boolean, rootCertificates?: Buffer, serverName?: string, timeoutMs?: number}} options
   *   tls: TLS with the system's root certificates; rootCertificates: TLS trusting these (PEM);
   *   serverName: the name the engine's certificate is verified for, when it is not the
   *   target's host (an address, or a name behind a tunnel), as the Python library's server_name;
   *   timeoutMs: the deadline of each attempt of a unary call, in milliseconds above 0 (default
   *   10000). A call safe to repeat is tried up to 10 times on UNAVAILABLE or a timeout, so a
   *   hung engine fails it after about 10 times that; streams have no deadline.
   *   backoffMs(attempt): the wait in milliseconds before a call is repeated or watch() reopens
   *   its stream, attempt 0, 1, 2... in a row (default: a full jitter up to 100 ms * 2^attempt,
   *   2 s at most), as the Python library's RetryPolicy.backoff; a rate limit's RetryInfo delay
   *   is waited when it is longer. One without jitter makes a retry's timing what a test says.
   * Another key is a TypeError: a misspelt one was dropped (`rootCertificate: pem` connected
   * without TLS, `timeout: 500` kept the 10 s deadline).
   */
  constructor(target, options = {}) {
    const unknown = Object.keys(options).filter((key) => !CLIENT_OPTION_KEYS.has(key));
    if (unknown.length) {
      throw new TypeError(`Client takes ${[...CLIENT_OPTION_KEYS].join(', ')}, not ${unknown.join(', ')}`);
    }
    const tls = Boolean(options.tls || options.rootCertificates || options.serverName);
    const credentials = tls
      ? grpc.credentials.createSsl(options.rootCertificates || null)
      : grpc.credentials.createInsecure();
    const channelOptions = {
      'grpc.keepalive_time_ms': 30000,
      'grpc.keepalive_timeout_ms': 10000,
      // the channel's own wait between connection attempts grows to 2 minutes while the engine
      // is unreachable (calls fail at once meanwhile): capped at a second, a stream is back
      // within about watch()'s backoff (2 s) of the engine (the Python library uses the same cap)
      'grpc.max_reconnect_backoff_ms': 1000,
    };
    if (options.serverName) channelOptions['grpc.ssl_target_name_override'] = options.serverName;
    this.stub = new api.CardGamesService(target, credentials, channelOptions);
    // 0 was taken for the default and a negative or NaN one failed every call with
    // DEADLINE_EXCEEDED (ten times over): refused here, naming the option
    const timeoutMs = options.timeoutMs ?? 10000;
    if (!(typeof timeoutMs === 'number' && timeoutMs > 0 && Number.isFinite(timeoutMs))) {
      throw new RangeError(`timeoutMs is a number of milliseconds above 0, not ${String(timeoutMs)}`);
    }
    this.timeoutMs = timeoutMs;
    const backoffMs = options.backoffMs ?? backoff;
    if (typeof backoffMs !== 'function') {
      throw new TypeError(`backoffMs is a function of the attempt, not ${String(backoffMs)}`);
    }
    this.backoffMs = backoffMs;
    // kept apart from the stub, which tests replace with a fake: a closed channel (SHUTDOWN)
    // never connects, and pause() then waits out its delay
    this.channel = this.stub.getChannel();
  }

  /**
   * Wait `delayMs` before a stream is reopened, or less when the engine was unreachable
   * (`failure` UNAVAILABLE) and the channel connects again meanwhile: the jittered delay then
   * only made the stream come back up to 2 s after the engine (a CI run saw 3 s), as the Python
   * library's _pause. A rate limit's refusal is waited out in full: the channel is up already.
   */
  async pause(delayMs, failure) {
    const { READY, SHUTDOWN } = grpc.connectivityState;
    const channel = this.channel;
    if (!failure || failure.code !== 'UNAVAILABLE' || failure.reason === 'RATE_LIMITED'
        || channel.getConnectivityState(false) === READY) {
      await sleep(delayMs);
      return;
    }
    const deadline = Date.now() + delayMs;
    let state = channel.getConnectivityState(true);
    while (state !== READY) {
      if (state === SHUTDOWN || Date.now() >= deadline) {
        await sleep(Math.max(0, deadline - Date.now()));
        return;
      }
      const changed = await new Promise((resolve) => {
        channel.watchConnectivityState(state, deadline, (error) => resolve(!error));
      });
      if (!changed) return; // the delay ran out first
      state = channel.getConnectivityState(true);
    }
  }

  close() {
    this.stub.close();
  }

  /**
   * One unary call. With `retry` (only for calls safe to repeat) it is repeated on UNAVAILABLE
   * or a timeout, and after a rate limit's refusal (RATE_LIMITED) once its RetryInfo delay has
   * passed, up to 10 tries in all; then the last error is thrown. `retried`: an array that
   * each error the call was repeated after is pushed to (a lost answer, or a refusal).
   */
  async call(method, request, { token, retry = false, retried } = {}) {
    const metadata = new grpc.Metadata();
    if (token) metadata.set('authorization', `Bearer ${token}`);
    const attempts = retry ? ATTEMPTS : 1;
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await new Promise((resolve, reject) => {
          const deadline = new Date(Date.now() + this.timeoutMs);
          this.stub[method](request, metadata, { deadline }, (error, reply) => (error ? reject(error) : resolve(reply)));
        });
      } catch (error) {
        const failure = toCardGamesError(error);
        const limited = rateLimited(failure);
        if ((!TRANSIENT.has(failure.code) && !limited) || attempt + 1 >= attempts) throw failure;
        const waitMs = limited ? failure.retryDelayMs || 0 : 0;
        if (waitMs > MAX_RATE_LIMIT_WAIT_MS) throw failure;
        if (retried) retried.push(failure);
        await sleep(Math.max(waitMs, this.backoffMs(attempt)));
      }
    }
  }

  async listGames() {
    return (await this.call('ListGames', {}, { retry: true })).games;
  }

  async listBots(game = '') {
    return (await this.call('ListBots', { game }, { retry: true })).bots;
  }

  /**
   * The bot plugins, and single bots of a plugin, that the engine left out when it started:
   * [{plugin, stage, reason}] (ListBotsResponse.load_failures), why a bot is missing from
   * listBots(), which says nothing about it (as the Python client's list_bot_load_failures).
   */
  async listBotLoadFailures() {
    return (await this.call('ListBots', {}, { retry: true })).load_failures;
  }

  /**
   * @param {string} game
   * @param {{seats?: (string|null)[], options?: object, turnTimeS?: number, name?: string,
   *   listed?: boolean, spectatorsAllowed?: boolean, spectatorDelayActions?: number,
   *   clientCreateId?: string}} spec
   *   seats: null for an open seat, a bot name otherwise; options: {name: string|number|boolean},
   *   or a ListGames OptionValue ({int_value: 500}, OptionSpec.default_value) as it came;
   *   listed: shown in the lobby (listOpenMatches) while it waits for players;
   *   spectatorsAllowed (default true) and spectatorDelayActions (spectators see the match that
   *   many actions late while it is played; 0, the default: live), as the Python library's.
   *   Another key is a TypeError: a misspelt one (spectatorsAllowd: false) would be dropped,
   *   and the match made without it.
   * Retried on UNAVAILABLE or a timeout with the same client_create_id (a fresh UUID unless
   * `clientCreateId`: 16 to 128 printable characters, a secret): a retry gets the match the
   * lost attempt created, never a second match; the same id with another spec is
   * ALREADY_EXISTS (CLIENT_CREATE_ID_IN_USE).
   */
  async createMatch(game, spec = {}) {
    const unknown = Object.keys(spec).filter((key) => !CREATE_SPEC_KEYS.has(key));
    if (unknown.length) {
      throw new TypeError(`createMatch takes ${[...CREATE_SPEC_KEYS].join(', ')}, not ${unknown.join(', ')}`);
    }
    const options = {};
    for (const [name, value] of Object.entries(spec.options || {})) options[name] = optionValue(name, value);
    const request = {
      game,
      options,
      seats: (spec.seats || []).map((s) => (s === null || s === 'open' ? { open: {} } : { bot: { name: s } })),
      name: spec.name || '',
      listed: Boolean(spec.listed),
      client_create_id: spec.clientCreateId || crypto.randomUUID(),
    };
    if (spec.spectatorsAllowed !== undefined) {
      if (typeof spec.spectatorsAllowed !== 'boolean') {
        throw new TypeError(`spectatorsAllowed is true or false, not ${String(spec.spectatorsAllowed)}`);
      }
      request.spectators_allowed = spec.spectatorsAllowed;
    }
    if (spec.spectatorDelayActions !== undefined) {
      if (!Number.isInteger(spec.spectatorDelayActions)) {
        throw new TypeError(`spectatorDelayActions is a whole number of actions, not ${String(spec.spectatorDelayActions)}`);
      }
      request.spectator_delay_actions = spec.spectatorDelayActions;  // the engine checks its range
    }
    if (spec.turnTimeS) {
      const seconds = Math.floor(spec.turnTimeS);
      request.turn_time = { seconds, nanos: Math.round((spec.turnTimeS - seconds) * 1e9) };
    }
    return (await this.call('CreateMatch', request, { retry: true })).match;
  }

  /**
   * The lobby: listed matches waiting for players with a seat free, oldest first; `limit`
   * matches a page (0: the server's 50), from `pageToken` on ('': the first page).
   * listOpenMatchesPage also gives the next page's token.
   */
  async listOpenMatches(game = '', limit = 0, pageToken = '') {
    return (await this.listOpenMatchesPage(game, limit, pageToken)).matches;
  }

  /**
   * One page of the lobby: { matches, nextPageToken }; pass nextPageToken as `pageToken`
   * with the same `game` for the next page ('' : this was the last; another game is
   * INVALID_ARGUMENT / BAD_PAGE_TOKEN). Keyset paging: a table created meanwhile comes on a
   * later page, none is listed twice (docs/api.md, "Paging").
   */
  async listOpenMatchesPage(game = '', limit = 0, pageToken = '') {
    const reply = await this.call('ListOpenMatches', { game, limit, page_token: pageToken }, { retry: true });
    return { matches: reply.matches || [], nextPageToken: reply.next_page_token || '' };
  }

  /**
   * Fair dealing: every deal's commitment opened for the cards shown, once the match is over
   * (before: CardGamesError FAILED_PRECONDITION / MATCH_NOT_OVER). `token`: a seat token, or
   * none for a spectator. Check each with verifyDeal.
   */
  async revealDeals(matchId, token = undefined) {
    return (await this.call('RevealDeals', { match_id: matchId }, { token, retry: true })).deals || [];
  }

  async getMatch(matchId) {
    return (await this.call('GetMatch', { match_id: matchId }, { retry: true })).match;
  }

  /**
   * Takes a seat (the first open one unless `seat`); the returned Seat holds the token.
   * Retried on UNAVAILABLE or a timeout with the same client_join_id (a fresh UUID unless
   * `clientJoinId`: 16 to 128 printable characters, a secret like the token): a retry gets the
   * seat the lost attempt took, with a new token, never a second seat. Another key of the
   * options is a TypeError (a misspelt `playername` would be dropped, the seat taken unnamed).
   */
  async join(matchId, spec = {}) {
    const unknown = Object.keys(spec).filter((key) => !JOIN_SPEC_KEYS.has(key));
    if (unknown.length) throw new TypeError(`join takes ${[...JOIN_SPEC_KEYS].join(', ')}, not ${unknown.join(', ')}`);
    const { seat, playerName = '', clientJoinId } = spec;
    const request = { match_id: matchId, player_name: playerName, client_join_id: clientJoinId || crypto.randomUUID() };
    if (seat !== undefined && seat !== null) request.seat = seat;
    const reply = await this.call('JoinMatch', request, { retry: true });
    // Zero is not sent for a plain proto3 int32: an absent seat is seat 0.
    return new Seat(this, reply.match_id, reply.seat || 0, reply.seat_token);
  }
}

class Seat {
  constructor(client, matchId, seat, token) {
    this.client = client;
    this.matchId = matchId;
    this.seat = seat;
    this.token = token;
  }

  async view() {
    return (await this.client.call('GetView', { match_id: this.matchId }, { token: this.token, retry: true })).view;
  }

  /** Submit one action; retried on UNAVAILABLE or a timeout with the same client_action_id (applied once). */
  async submit(action, expectedSeq) {
    const request = { match_id: this.matchId, action, client_action_id: crypto.randomUUID() };
    if (expectedSeq !== undefined && expectedSeq !== null) request.expected_seq = expectedSeq;
    return this.client.call('SubmitAction', request, { token: this.token, retry: true });
  }

  /**
   * Decide on `view` and submit with expected_seq; on ABORTED decide again on the fresh view
   * the error carries. Resolves to the reply, or null when it is no longer this seat's turn
   * (another seat or a timer moved on, or the match ended meanwhile: MATCH_NOT_ACTIVE).
   */
  async act(decide, view) {
    let current = view || (await this.view());
    for (let attempt = 0; attempt < 6; attempt += 1) {
      if (current.to_act !== this.seat || current.over) return null;
      try {
        return await this.submit(decide(current), current.seq || 0);
      } catch (error) {
        if (!(error instanceof CardGamesError)) throw error;
        if (error.code === 'FAILED_PRECONDITION' && error.reason === 'MATCH_NOT_ACTIVE') return null;
        if (error.code !== 'ABORTED') throw error;
        current = error.view || (await this.view());
      }
    }
    throw new CardGamesError('ABORTED', 'the view was stale six times in a row', 'STALE_SEQUENCE', {}, current);
  }

  /**
   * Leaves the match: frees the seat while it waits; in an active match, resigns. Repeated on
   * UNAVAILABLE or a timeout, and after a rate limit's delay, as call() repeats: the server
   * answers a repeat after the seat's own leave took effect with OK (docs/api.md, "Leaving"):
   * the match as it stands, or for a seat freed in a waiting match, the first leave's answer.
   * An engine that no longer remembers that leave (restarted since, or older than 2026-12-04)
   * answers the freed seat's void token UNAUTHENTICATED: after a lost answer that means the
   * first leave went through, and the match's public summary is returned.
   */
  async leave(resign = false) {
    const request = { match_id: this.matchId, resign };
    const retried = [];
    try {
      return (await this.client.call('LeaveMatch', request, { token: this.token, retry: true, retried })).match;
    } catch (error) {
      // no answer was lost (a refusal did nothing): the token is bad
      if (error.code !== 'UNAUTHENTICATED' || !retried.some((e) => TRANSIENT.has(e.code))) throw error;
      return this.client.getMatch(this.matchId); // the lost leave freed the seat
    }
  }

  /**
   * The match's events for this seat as an async iterator, resumed with after_seq after a
   * dropped stream (each ACTION exactly once; a rate-limited reopening waits its RetryInfo
   * delay); it ends after the MATCH_ENDED event.
   *
   * A dropped stream is one that failed with UNAVAILABLE, DEADLINE_EXCEEDED or CANCELLED, and
   * also INTERNAL or UNKNOWN (what a broken HTTP/2 stream, RST_STREAM, can end with), the latter
   * reopened at most 3 times in a row without an event in between: the fourth such failure is
   * thrown (a server fault would fail forever), as in the Python library. Each reopening waits
   * the client's backoffMs (by default a jittered backoff: up to 100 ms, 200 ms, 400 ms... 2 s;
   * an event received starts it over), or less when the engine was unreachable and the channel
   * connects again meanwhile (Client.pause).
   *
   * A resumed stream replays actions only, and the match's start is no action (seq 0 before
   * and after it; watchers get it as the PRESENCE event of the last seat's join). So while the
   * view last delivered is still WAITING (or none was delivered and the last seq is 0), the
   * stream is reopened without after_seq: it starts with a SNAPSHOT of the current view, the
   * started one if the match started meanwhile, instead of staying on the waiting view until
   * the first action. That SNAPSHOT is delivered only when it is at the last seq received (no
   * action in between); else the stream is opened again with after_seq and the actions played
   * meanwhile come as ACTION events, each once.
   *
   * A reopening refused with BAD_AFTER_SEQ (the match is behind the events delivered: the
   * operator restored a backup) starts again from a SNAPSHOT of the match as it stands, once
   * the server has sent a message on this watch: before that, afterSeq is only the caller's,
   * and BAD_AFTER_SEQ is thrown as at the first opening.
   *
   * Options: `maxFailures`, the reopenings in a row without an event after which the failure
   * is thrown (undefined: keep trying while the server is unreachable); `onConnection(change)`,
   * awaited when it returns a promise, told what the stream itself cannot say (while it is
   * down no event comes, as on a quiet table): `{state: 'reconnecting', attempt, maxAttempts,
   * error, delayMs}` before every reopening (attempt 1, 2... in a row; error undefined when the
   * server ended the stream cleanly), `{state: 'resumed', attempt, maxAttempts}` just before
   * the first event of the stream that came back (the missed ones follow), `{state: 'gave_up',
   * attempt, maxAttempts, error}` just before the error is thrown (after maxFailures
   * reopenings, or a fourth INTERNAL / UNKNOWN; not for errors that reconnecting cannot fix).
   * On an idle match the first event back is the heartbeat the server sends at once when
   * there is nothing to replay.
   *
   * `silenceTimeoutMs`: a stream that delivers nothing, not even a heartbeat, for that long is
   * taken for lost and reopened as after a drop (its 'reconnecting' error: UNAVAILABLE,
   * reason STREAM_SILENT). A network that drops every packet without a reset ends no call:
   * keepalive notices late, and not at all where a proxy answers the pings. Undefined (the
   * default): three of the heartbeat intervals the server names in its HEARTBEAT events
   * (details.interval_s) plus 1 s, 16 s at the server's default 5 s, from the first heartbeat
   * on (a server that names none: no limit); 0: no limit. Only the waits for the next message
   * count, not the time the caller takes between events.
   */
  async *watch(afterSeq, { maxFailures, onConnection, silenceTimeoutMs } = {}) {
    // a negative silenceTimeoutMs cancelled every stream at once, reopening it forever, and NaN
    // was no limit; a negative maxFailures gave up at the first drop, NaN never: refused here
    const unset = (value) => value === undefined || value === null;
    if (!unset(silenceTimeoutMs) && !(typeof silenceTimeoutMs === 'number' && silenceTimeoutMs >= 0 && Number.isFinite(silenceTimeoutMs))) {
      throw new RangeError(`silenceTimeoutMs is a number of milliseconds, 0 or more, not ${String(silenceTimeoutMs)}`);
    }
    if (!unset(maxFailures) && !(Number.isInteger(maxFailures) && maxFailures >= 0)) {
      throw new RangeError(`maxFailures is a whole number, 0 or more, not ${String(maxFailures)}`);
    }
    let last = afterSeq;
    const known = () => last !== undefined && last !== null;
    // Whether replaying after `last` shows the match as it is: the view last delivered is past
    // WAITING, or actions came after it (a match with actions, last > 0, has started too).
    let started = false;
    let first = true; // the first stream opens as asked
    // the server has sent a message: `last` is a seq it delivered or took, not only the
    // caller's (BAD_AFTER_SEQ then means a restored match, not the caller's mistake)
    let heard = false;
    let failures = 0;
    let down = false; // a drop was reported (reconnecting) and no event has come since
    const learn = silenceTimeoutMs === undefined || silenceTimeoutMs === null;
    let silenceMs = silenceTimeoutMs || undefined; // the longest wait for a message (undefined: none)
    const tell = async (change) => { if (onConnection) await onConnection({ maxAttempts: maxFailures, ...change }); };
    for (;;) {
      let waitMs = 0;
      let failure; // why the stream dropped (undefined: it ended cleanly)
      const metadata = new grpc.Metadata();
      metadata.set('authorization', `Bearer ${this.token}`);
      const request = { match_id: this.matchId };
      if (known() && (first || started || last > 0)) request.after_seq = last;
      // reopened without after_seq on a waiting view: its SNAPSHOT must not skip actions
      let checking = known() && request.after_seq === undefined;
      let behind = false;
      first = false;
      const call = this.client.stub.WatchMatch(request, metadata);
      let silent; // the limit that ran out, when the stream was cancelled for its silence
      let timer;
      const arm = () => {
        clearTimeout(timer);
        if (silenceMs) {
          const limit = silenceMs;
          timer = setTimeout(() => { silent = limit; call.cancel(); }, limit);
        }
      };
      try {
        arm();
        for await (const event of call) {
          clearTimeout(timer);
          heard = true;
          try {
            if (learn && event.kind === 'EVENT_KIND_HEARTBEAT') {
              // a Struct's Value keeps protobufjs' camelCase names (numberValue)
              const interval = event.details && event.details.fields && event.details.fields.interval_s;
              if (interval && interval.numberValue > 0) silenceMs = (3 * interval.numberValue + 1) * 1000;
            }
            if (down) {
              down = false;
              await tell({ state: RESUMED, attempt: failures });
            }
            failures = 0;
            event.seq = event.seq || 0; // proto3 does not send a zero int64
            if (checking) {
              checking = false;
              if (event.kind === 'EVENT_KIND_SNAPSHOT' && event.seq > last) {
                // actions were played meanwhile: replay them, each an ACTION event
                started = true;
                behind = true;
                break;
              }
            }
            if (event.kind === 'EVENT_KIND_ACTION' && known() && event.seq <= last) continue;
            if (['EVENT_KIND_ACTION', 'EVENT_KIND_SNAPSHOT', 'EVENT_KIND_MATCH_ENDED'].includes(event.kind)) last = event.seq;
            if (event.view) started = event.view.status !== 'MATCH_STATUS_WAITING';
            yield event;
            if (event.kind === 'EVENT_KIND_MATCH_ENDED') return;
          } finally {
            arm(); // the wait for the next message starts now
          }
        }
        clearTimeout(timer); // the stream is over: nothing more to wait for
        if (behind) continue; // reopened at once, with after_seq (no failure)
        const summary = await this.client.getMatch(this.matchId);
        if (['MATCH_STATUS_FINISHED', 'MATCH_STATUS_TERMINATED'].includes(summary.status)) return;
      } catch (error) {
        // not a status of the stream (which has a numeric code) nor one of this client's
        // errors: the caller's own onConnection hook failed; it goes through as it is, not as a
        // CardGamesError UNKNOWN that would blame the engine
        if (silent === undefined && !(error instanceof CardGamesError) && !Number.isInteger(error && error.code)) throw error;
        failure = silent !== undefined
          ? new CardGamesError('UNAVAILABLE', `no message for ${silent / 1000} s (heartbeats included): the stream is taken for lost`,
            'STREAM_SILENT', {})
          : error instanceof CardGamesError ? error : toCardGamesError(error);
        if (heard && failure.reason === 'BAD_AFTER_SEQ' && request.after_seq !== undefined) {
          // The match is behind the events already delivered: the operator restored a backup
          // (docs/operations.md, "Backup and restore"). Start again from a SNAPSHOT of the
          // match as it now stands and follow it from there, rather than give up the seat.
          last = undefined;
          started = false;
          continue;
        }
        // the stream's own INTERNAL or UNKNOWN status (not a bug of this code, not a failed
        // getMatch): perhaps a broken connection, reopened while failures stay below the limit
        const unclear = Number.isInteger(error.code) && MAYBE_RESUMABLE.has(failure.code)
          && failures < MAX_UNCLEAR_FAILURES;
        // a reopening refused by a rate limit did nothing: open again after its delay
        const limited = rateLimited(failure);
        if (!RESUMABLE.has(failure.code) && !unclear && !limited) {
          if (MAYBE_RESUMABLE.has(failure.code) && Number.isInteger(error.code)) {
            await tell({ state: GAVE_UP, attempt: failures, error: failure }); // the unclear ones ran out
          }
          throw failure;
        }
        if (maxFailures !== undefined && maxFailures !== null && failures >= maxFailures) {
          await tell({ state: GAVE_UP, attempt: failures, error: failure });
          throw failure;
        }
        if (limited) waitMs = failure.retryDelayMs || 0;
      } finally {
        clearTimeout(timer);
        call.cancel();
      }
      const delayMs = Math.max(waitMs, this.client.backoffMs(failures));
      down = true;
      await tell({ state: RECONNECTING, attempt: failures + 1, error: failure, delayMs });
      await this.client.pause(delayMs, failure);
      failures += 1;
    }
  }
}

/**
 * Whether a revealed deal opens its commitment (docs/api.md, "Fair dealing"): every shown card
 * is hashed with its salt (SHA-256 of "<card salt>:<card>"), every hidden position is taken as
 * its hash, and the SHA-256 of those hashes, top first and comma-separated, must be the
 * commitment seen while the match was played. `pack`: the game's cards (PACKS[game]); given,
 * the reveal must have one position per card of it and show only cards of it (a commitment to
 * 31 or 33 positions, or to a card the game lacks, opens too: only the pack tells). False for
 * a deal that cannot be opened card by card (recorded before commitments existed, or before
 * schema 4).
 */
function verifyDeal(reveal, commitment = reveal.commitment, { pack } = {}) {
  const sha256 = (text) => require('node:crypto').createHash('sha256').update(text, 'utf8').digest('hex');
  const cards = reveal.cards || [];
  const salts = reveal.card_salts || [];
  const hashes = reveal.card_hashes || [];
  if (!commitment || !cards.length || cards.length !== salts.length || cards.length !== hashes.length) return false;
  const shown = cards.filter((c) => c);
  if (new Set(shown).size !== shown.length) return false;
  if (pack && (cards.length !== pack.length || !shown.every((c) => pack.includes(c)))) return false;
  // a salt (or a salted card) used twice: the salts are not per position, and a hidden card
  // hashed with a shown card's salt could be found by trying the pack's cards
  const shownSalts = salts.filter((s) => s);
  const hidden = hashes.filter((h) => h);
  if (new Set(shownSalts).size !== shownSalts.length || new Set(hidden).size !== hidden.length) return false;
  if (pack && hidden.length) {
    const guessable = new Set(shownSalts.flatMap((s) => pack.map((c) => sha256(`${s}:${c}`))));
    if (hidden.some((h) => guessable.has(h))) return false;
  }
  const opened = [];
  for (let i = 0; i < cards.length; i += 1) {
    if (cards[i] && /^[0-9a-f]{32}$/.test(salts[i]) && !hashes[i]) opened.push(sha256(`${salts[i]}:${cards[i]}`));
    else if (!cards[i] && !salts[i] && /^[0-9a-f]{64}$/.test(hashes[i])) opened.push(hashes[i]);
    else return false;
  }
  return sha256(opened.join(',')) === commitment.toLowerCase();
}

// The pack of each game, for verifyDeal's `pack` (KL-1.1, JJ-1.1, GJ-1.1, JJK-1.1): 32 cards
// seven to ace; the Jokers' 36 cards six to ace with 6S and 6C replaced by the jokers X1, X2.
const PACK32 = [...'SHDC'].flatMap((s) => [...'789TJQKA'].map((r) => r + s));
const PACK36 = [...'SHDC'].flatMap((s) => [...'6789TJQKA'].filter((r) => r !== '6' || 'HD'.includes(s)).map((r) => r + s))
  .concat(['X1', 'X2']);
const PACKS = Object.freeze({ klaberjass: PACK32, jojotte: PACK32, georgian_joker: PACK36, japanese_joker: PACK36 });

module.exports = {
  Client, Seat, CardGamesError, toCardGamesError, verifyDeal, PACKS, api, RECONNECTING, RESUMED, GAVE_UP, TRANSIENT,
};
