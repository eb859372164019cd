#!/usr/bin/env node
// Verify a Taskkeeper desk's signed Agent Cards with the A2A JavaScript SDK's own verifier
// (@a2a-js/sdk's verifyAgentCardSignature, pinned in package.json):
//
//     node a2a_js_verify_card.mjs --base http://127.0.0.1:PORT --desk web --token TOKEN
//                                 --thumbprint KID [--expect-fail]
//
// The SDK's card resolver fetches the machine's and the desk's public card, and its client
// (JSON-RPC, with the token) the desk's extended card. The key provider fetches the JWK Set the
// signature's `jku` names and returns the key with the signature's `kid`, which must be the
// thumbprint the owner handed over (the pin). Then a card changed by one character, a changed
// signature, an unsigned card and another pin must each be refused.
//
// With --expect-fail the cards must NOT verify (the key was rotated after the pin was taken).
// Each check prints one JSON line {"check", "ok", ...}; the last is {"check": "all"}.

import { verifyAgentCardSignature } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  createAuthenticatingFetchWithRetry,
} from '@a2a-js/sdk/client';

function args() {
  const out = {};
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i].replace(/^--/, '');
    if (name === 'expect-fail') out.expectFail = true;
    else out[name] = argv[++i];
  }
  for (const need of ['base', 'desk', 'token', 'thumbprint']) {
    if (!out[need]) throw new Error(`--${need} is required`);
  }
  return out;
}

const opts = args();
let failed = 0;

function emit(fields) {
  process.stdout.write(JSON.stringify(fields) + '\n');
}

function check(name, ok, detail = {}) {
  if (!ok) failed++;
  emit({ check: name, ok: Boolean(ok), ...detail });
}

// The verifier logs each entry that fails on console.debug; the checks say what matters.
console.debug = () => {};

function keyProvider(pin) {
  return async (kid, jku) => {
    if (kid !== pin) throw new Error(`kid ${kid} is not the pinned thumbprint ${pin}`);
    if (!jku) throw new Error('no jku in the protected header');
    const response = await fetch(jku);
    if (!response.ok) throw new Error(`the key set at ${jku} answered ${response.status}`);
    const { keys } = await response.json();
    const key = keys.find((k) => k.kid === kid);
    if (!key) throw new Error(`no key ${kid} at ${jku}`);
    return key;
  };
}

async function verifies(verifier, card) {
  try {
    await verifier(card);
    return [true, null];
  } catch (e) {
    return [false, String(e?.message ?? e)];
  }
}

const verifier = verifyAgentCardSignature(keyProvider(opts.thumbprint));
const resolver = new DefaultAgentCardResolver();
const cards = {
  machine: await resolver.resolve(`${opts.base}/`),
  desk: await resolver.resolve(`${opts.base}/a2a/${opts.desk}/`),
};
const fetchImpl = createAuthenticatingFetchWithRetry(fetch, {
  headers: async () => ({ Authorization: `Bearer ${opts.token}` }),
  shouldRetryWithHeaders: async () => undefined,
});
const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    preferredTransports: ['JSONRPC'],
  }),
);
const client = await factory.createFromUrl(`${opts.base}/a2a/${opts.desk}/.well-known/agent-card.json`, '');
// The extended card as it arrives (JSON-RPC, with the token). The SDK's verifier is given
// the document received: handed the client's own parsed AgentCard (`client.getAgentCard()`),
// 1.3.0's canonicalizeAgentCard drops every oneof member, the security schemes among them,
// and no signed card that declares one verifies (a2aproject/a2a-js#663, open).
const answer = await fetchImpl(`${opts.base}/a2a/${opts.desk}`, {
  method: 'POST',
  headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
  body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetExtendedAgentCard', params: {} }),
});
cards.extended = (await answer.json()).result;
check('the extended card is the one with the directory', cards.extended?.description?.includes('working in'), {
  description: cards.extended?.description,
});
const parsed = await client.getAgentCard();

const want = !opts.expectFail;
for (const [name, card] of Object.entries(cards)) {
  const [ok, why] = await verifies(verifier, card);
  check(want ? `${name} card verifies` : `${name} card is refused`, ok === want, { why });
}

if (want) {
  // What the client parsed is the same card (the verifier needs the document itself).
  check('the client reads the same extended card', parsed.description === cards.extended.description);

  const copy = () => structuredClone(cards.desk);
  const tampered = copy();
  tampered.description = tampered.description.slice(0, -1) + (tampered.description.endsWith('x') ? 'y' : 'x');
  let [ok, why] = await verifies(verifier, tampered);
  check('a card changed by one character is refused', !ok, { why });

  const forged = copy();
  const sig = forged.signatures[0].signature;
  forged.signatures[0].signature = (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1);
  [ok, why] = await verifies(verifier, forged);
  check('a changed signature is refused', !ok, { why });

  const bare = copy();
  delete bare.signatures;
  [ok, why] = await verifies(verifier, bare);
  check('an unsigned card is refused', !ok && /No signatures/.test(why), { why });

  [ok, why] = await verifies(verifyAgentCardSignature(keyProvider(`not-${opts.thumbprint}`)), cards.desk);
  check('another pinned key refuses the card', !ok, { why });
}

emit({ check: 'all', ok: failed === 0 });
process.exit(failed ? 1 : 0);
