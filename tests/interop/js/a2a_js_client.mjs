#!/usr/bin/env node
// Drive a Taskkeeper desk over TLS with the A2A JavaScript SDK's client (@a2a-js/sdk, pinned in
// package.json), as an asker on another machine does:
//
//     node a2a_js_client.mjs --url https://HOST:PORT/a2a/web --token TOKEN --pin AB:CD:...
//                            [--binding JSONRPC|HTTP+JSON]
//                            [--webhook-host IP --webhook-cert PEM --webhook-key PEM]
//
// The asker has the desk's URL, its token and the certificate's SHA-256 fingerprint, which the
// owner's `taskkeeper asker add` printed. It pins the certificate: it reads the one the server
// presents, refuses it unless its fingerprint is the pinned one, and from then on trusts that
// certificate alone (with the usual name check), for every request the SDK makes.
//
// Only the SDK's public client is used (ClientFactory, its card resolver and transports), with a
// fetch that carries the token and the pinned trust. Each check prints one JSON line
// {"check", "ok", ...}. Where a task must end, the script prints
// {"await": "worker", "request": TEXT, "status": "done", "text": SUMMARY} and the harness ends
// it as the worker would (crates/cli/tests/it/network_asker.rs). Exit status 1 if a check failed.
//
// With --webhook-host, the push check sets a webhook at an https:// receiver on that address of
// this machine (the certificate and key given, signed by a CA the daemon's owner trusts in
// push.extra_roots) and sees the task arrive as its first push, with the token and credentials.

import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import tls from 'node:tls';
import { Role, TaskState } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
  createAuthenticatingFetchWithRetry,
} from '@a2a-js/sdk/client';
import { Agent, fetch as undiciFetch } from 'undici';

const EVENT_TIMEOUT_MS = 20_000;

function args() {
  const out = { binding: 'JSONRPC' };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) out[argv[i].replace(/^--/, '')] = argv[i + 1];
  for (const need of ['url', 'token', 'pin']) {
    if (!out[need]) throw new Error(`--${need} is required`);
  }
  return out;
}

const opts = args();
let failed = 0;

function emit(fields) {
  process.stdout.write(JSON.stringify({ binding: opts.binding, ...fields }) + '\n');
}

class Mismatch extends Error {}

function expect(cond, message) {
  if (!cond) throw new Mismatch(message);
}

async function check(name, body) {
  try {
    const detail = (await body()) ?? {};
    emit({ check: name, ok: true, ...detail });
  } catch (e) {
    failed += 1;
    emit({ check: name, ok: false, error: `${e.constructor.name}: ${e.message}` });
  }
}

function withTimeout(promise, what) {
  return Promise.race([
    promise,
    new Promise((_, reject) => setTimeout(() => reject(new Error(`${what} timed out`)), EVENT_TIMEOUT_MS)),
  ]);
}

/** The server's certificate as PEM, if its SHA-256 is the pinned one; else an error. */
async function pinned(url, pin) {
  const { hostname, port } = new URL(url);
  const host = hostname.replace(/^\[|\]$/g, '');
  const cert = await new Promise((resolve, reject) => {
    // Not verified here: the fingerprint is what decides.
    const socket = tls.connect({ host, port: Number(port), rejectUnauthorized: false }, () => {
      const c = socket.getPeerCertificate();
      socket.end();
      resolve(c);
    });
    socket.on('error', reject);
  });
  const fingerprint = createHash('sha256')
    .update(cert.raw)
    .digest('hex')
    .toUpperCase()
    .match(/../g)
    .join(':');
  if (fingerprint !== pin.toUpperCase()) {
    throw new Error(`the server's certificate is ${fingerprint}, not the pinned ${pin}`);
  }
  const b64 = cert.raw.toString('base64').match(/.{1,64}/g).join('\n');
  return `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`;
}

function message(text, taskId = '') {
  return {
    messageId: `js-interop-${randomUUID()}`,
    contextId: '',
    taskId,
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function request(msg, returnImmediately) {
  return {
    tenant: '',
    message: msg,
    configuration: {
      acceptedOutputModes: [],
      taskPushNotificationConfig: undefined,
      returnImmediately,
    },
    metadata: undefined,
  };
}

function stateName(state) {
  return TaskState[state] ?? String(state);
}

function expectState(task, want, what) {
  expect(task.status?.state === want, `${what}: task ${task.id} is ${stateName(task.status?.state)}, expected ${stateName(want)}`);
}

const ca = await pinned(opts.url, opts.pin);
const agent = new Agent({ connect: { ca } });
const trusted = (input, init) => undiciFetch(input, { ...init, dispatcher: agent });
const fetchImpl = createAuthenticatingFetchWithRetry(trusted, {
  headers: async () => ({ Authorization: `Bearer ${opts.token}` }),
  shouldRetryWithHeaders: async () => undefined,
});
const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    preferredTransports: [opts.binding],
  }),
);
const ids = {};
let client;

await check('card', async () => {
  // The desk's card lives under its URL (the well-known path joined onto the desk).
  client = await factory.createFromUrl(`${opts.url}/.well-known/agent-card.json`, '');
  const card = await client.getAgentCard();
  const urls = card.supportedInterfaces.map((i) => i.url);
  expect(urls.length > 0 && urls.every((u) => u === opts.url), `the card's interfaces name ${urls}, expected ${opts.url}`);
  expect(client.transport.protocolName === opts.binding, `the SDK chose ${client.transport.protocolName}`);
  const ext = card.capabilities?.extensions?.[0]?.params ?? {};
  expect(ext.tlsCertificateSha256 === opts.pin.toUpperCase(), `the card names certificate ${ext.tlsCertificateSha256}`);
  return { name: card.name, transport: client.transport.protocolName };
});

await check('send', async () => {
  const result = await client.sendMessage(request(message('js interop: send'), true));
  expect('status' in result, `SendMessage answered ${JSON.stringify(result)}, expected a Task`);
  expectState(result, TaskState.TASK_STATE_WORKING, 'send');
  ids.sent = result.id;
  return { taskId: result.id };
});

await check('get', async () => {
  expect(ids.sent, 'needs the task from send');
  const task = await client.getTask({ tenant: '', id: ids.sent });
  expect(task.id === ids.sent, `GetTask answered ${task.id}`);
  expectState(task, TaskState.TASK_STATE_WORKING, 'get');
  return { taskId: task.id };
});

await check('cancel', async () => {
  expect(ids.sent, 'needs the task from send');
  const task = await client.cancelTask({ tenant: '', id: ids.sent, metadata: undefined });
  expectState(task, TaskState.TASK_STATE_CANCELED, 'cancel');
  return { taskId: task.id };
});

await check('stream', async () => {
  const text = 'js interop: streamed';
  const events = client.sendMessageStream(request(message(text), false));
  const first = await withTimeout(events.next(), 'the first event');
  expect(first.value?.payload?.$case === 'task', `the first event is ${JSON.stringify(first.value)}`);
  const task = first.value.payload.value;
  expectState(task, TaskState.TASK_STATE_WORKING, 'the stream\'s first event');
  process.stdout.write(JSON.stringify({ await: 'worker', request: text, status: 'done', text: 'done over TLS' }) + '\n');
  let last = task.status.state;
  for (;;) {
    const next = await withTimeout(events.next(), 'the completion');
    if (next.done) break;
    const payload = next.value.payload;
    if (payload?.$case === 'statusUpdate') last = payload.value.status.state;
  }
  expect(last === TaskState.TASK_STATE_COMPLETED, `the stream ended at ${stateName(last)}`);
  const got = await client.getTask({ tenant: '', id: task.id });
  expectState(got, TaskState.TASK_STATE_COMPLETED, 'get after the stream');
  return { taskId: task.id, last: stateName(last) };
});

if (opts['webhook-host']) {
  await check('push', async () => {
    const sent = await client.sendMessage(request(message('js interop: push'), true));
    expect('status' in sent, `SendMessage answered ${JSON.stringify(sent)}, expected a Task`);
    let arrived;
    const first = new Promise((resolve) => {
      arrived = resolve;
    });
    const server = https.createServer(
      { cert: readFileSync(opts['webhook-cert']), key: readFileSync(opts['webhook-key']) },
      (req, res) => {
        let body = '';
        req.on('data', (chunk) => {
          body += chunk;
        });
        req.on('end', () => {
          res.writeHead(200, { Connection: 'close' }).end();
          arrived({ headers: req.headers, body: JSON.parse(body || 'null') });
        });
      },
    );
    await new Promise((resolve) => server.listen(0, opts['webhook-host'], resolve));
    try {
      const url = `https://${opts['webhook-host']}:${server.address().port}/hook`;
      const made = await client.createTaskPushNotificationConfig({
        tenant: '',
        id: 'js-hook',
        taskId: sent.id,
        url,
        token: 'js-token',
        authentication: { scheme: 'Bearer', credentials: 'js-secret' },
      });
      expect(made.url === url, `the created config has url ${made.url}`);
      const push = await withTimeout(first, 'the first push');
      expect(push.headers.authorization === 'Bearer js-secret', `push headers ${JSON.stringify(push.headers)}`);
      expect(push.headers['x-a2a-notification-token'] === 'js-token', `push headers ${JSON.stringify(push.headers)}`);
      expect(push.body?.task?.id === sent.id, `the first push is not the task ${sent.id}: ${JSON.stringify(push.body)}`);
      await client.cancelTask({ tenant: '', id: sent.id, metadata: undefined });
      return { taskId: sent.id, url };
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
}

emit({ check: 'all', ok: failed === 0, failed });
await agent.close();
process.exit(failed === 0 ? 0 : 1);
