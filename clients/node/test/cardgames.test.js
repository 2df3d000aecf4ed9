'use strict';
// Offline unit tests of the Node client's decoding (run: npm test). The end-to-end test that
// plays a match against a real engine is tests/clients/test_node_client.py.
const test = require('node:test');
const assert = require('node:assert');
const grpc = require('@grpc/grpc-js');
const protobuf = require('protobufjs');
const path = require('node:path');
const { toCardGamesError, CardGamesError } = require('../cardgames');
const { fromStruct, parseArgs } = require('../play_vs_bot');

function statusDetails(root, details) {
  const Status = root.lookupType('google.rpc.Status');
  const any = details.map(([type, value]) => ({
    type_url: `type.googleapis.com/${type}`,
    value: root.lookupType(type).encode(root.lookupType(type).fromObject(value)).finish(),
  }));
  return Buffer.from(Status.encode(Status.fromObject({ code: 10, message: 'stale', details: any })).finish());
}

test('an ABORTED error carries its reason, metadata and the current view', () => {
  const root = new protobuf.Root();
  root.resolvePath = (origin, target) => (target.startsWith('google/protobuf/')
    ? target : [path.resolve(__dirname, '..', 'proto', target), path.resolve(__dirname, '..', '..', '..', 'proto', target)]
      .find((p) => require('node:fs').existsSync(p)));
  root.loadSync(['google/rpc/status.proto', 'cardgames/v1/match.proto'], { keepCase: true });
  const metadata = new grpc.Metadata();
  metadata.set('grpc-status-details-bin', statusDetails(root, [
    ['google.rpc.ErrorInfo', { reason: 'STALE_SEQUENCE', domain: 'cardgames.v1', metadata: { seq: '7' } }],
    ['cardgames.v1.View', { match_id: 'm1', seq: 7, to_act: 1 }],
  ]));
  const error = toCardGamesError({ code: grpc.status.ABORTED, details: 'stale', metadata });
  assert.ok(error instanceof CardGamesError);
  assert.strictEqual(error.code, 'ABORTED');
  assert.strictEqual(error.reason, 'STALE_SEQUENCE');
  assert.deepStrictEqual(error.metadata, { seq: '7' });
  assert.strictEqual(error.view.match_id, 'm1');
  assert.strictEqual(error.view.seq, 7);
  assert.strictEqual(error.view.to_act, 1);
});

test('an error without details still has its code', () => {
  const error = toCardGamesError({ code: grpc.status.UNAVAILABLE, details: 'no connection', metadata: new grpc.Metadata() });
  assert.strictEqual(error.code, 'UNAVAILABLE');
  assert.strictEqual(error.reason, '');
});

test('Struct values decode to plain JavaScript', () => {
  const struct = { fields: {
    totals: { kind: 'listValue', listValue: { values: [{ kind: 'numberValue', numberValue: 12 }, { kind: 'numberValue', numberValue: -3 }] } },
    over: { kind: 'boolValue', boolValue: true },
    reason: { kind: 'stringValue', stringValue: 'rules' },
    nested: { kind: 'structValue', structValue: { fields: { a: { kind: 'nullValue', nullValue: 0 } } } },
  } };
  assert.deepStrictEqual(fromStruct(struct), { totals: [12, -3], over: true, reason: 'rules', nested: { a: null } });
});

test('command-line arguments', () => {
  const args = parseArgs(['--game', 'georgian_joker', '--bot', 'search', '--option', 'deal_schedule=nines', '--policy', 'first']);
  assert.strictEqual(args.game, 'georgian_joker');
  assert.deepStrictEqual(args.options, { deal_schedule: 'nines' });
  assert.throws(() => parseArgs(['--policy', 'clever']));
});

test('act() stops once the match has ended meanwhile, and re-decides on a stale view', async () => {
  const { Seat } = require('../cardgames');
  const calls = [];
  const answers = [
    new CardGamesError('ABORTED', 'stale', 'STALE_SEQUENCE', {}, { seq: 9, to_act: 0, over: false }),
    new CardGamesError('FAILED_PRECONDITION', 'the match is over', 'MATCH_NOT_ACTIVE', {}, undefined),
  ];
  const client = { call: async (method, request) => { calls.push(request.expected_seq); throw answers.shift(); } };
  const seat = new Seat(client, 'm1', 0, 'token');
  const reply = await seat.act(() => 'play:AS', { seq: 7, to_act: 0, over: false });
  assert.strictEqual(reply, null);
  assert.deepStrictEqual(calls, [7, 9]);
  const refused = new Seat({ call: async () => { throw new CardGamesError('FAILED_PRECONDITION', 'illegal', 'ILLEGAL_ACTION', {}); } }, 'm1', 0, 't');
  await assert.rejects(refused.act(() => 'play:AS', { seq: 3, to_act: 0 }), /ILLEGAL_ACTION/);
});
