#!/usr/bin/env node
// Drive a Taskkeeper desk with the A2A JavaScript SDK's client (@a2a-js/sdk, pinned in
// package.json), as an asker does:
//
//     node a2a_js_client.mjs --url URL --token TOKEN [--pin AB:CD:...]
//                            [--binding JSONRPC|HTTP+JSON|GRPC]
//                            [--webhook-host IP [--webhook-cert PEM --webhook-key PEM]]
//
// URL is the desk's (https://HOST:PORT/a2a/web from another machine, http://127.0.0.1:PORT/a2a/web
// on this one). With --pin (an asker on another machine, over TLS) the asker has the certificate's
// SHA-256 fingerprint, which the owner's `taskkeeper asker add` printed: it reads the certificate
// the server presents, refuses it unless its fingerprint is the pinned one, and from then on
// trusts that certificate alone (with the usual name check), for every request the SDK makes.
// For GRPC the card's GRPC interface names the listener's `host:port` and the desk as its tenant
// (over the same TLS from another machine), and the token goes in the call's metadata.
//
// Only the SDK's public client is used (ClientFactory, its card resolver and transports), with a
// fetch that carries the token (and the pinned trust). Each check prints one JSON line
// {"check", "ok", ...}. Where a task must end, the script prints
// {"await": "worker", "request": TEXT, "status": "done", "text": SUMMARY} and the harness ends
// it as the worker would (crates/cli/tests/it/network_asker.rs, interop.rs). Exit status 1 if a
// check failed.
//
// With --webhook-host, the push check sets a webhook at a receiver on that address of this
// machine and sees the task arrive as its first push, with the token and credentials: https://
// with the certificate and key given (signed by a CA the daemon's owner trusts in
// push.extra_roots), else http:// (a loopback receiver the owner allows).

import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
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
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import { credentials as grpcCredentials } from '@grpc/grpc-js';
import { Agent, fetch as undiciFetch } from 'undici';

const EVENT_TIMEOUT_MS = 20_000;

function args() {
  const out = { binding: 'JSONRPC' };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) out[argv[i].replace(/^--/, '')] = argv[i + 1];
  for (const need of ['url', 'token']) {
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
    tenant,
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

const ca = opts.pin ? await pinned(opts.url, opts.pin) : undefined;
const agent = ca ? new Agent({ connect: { ca } }) : new Agent();
const trusted = (input, init) => undiciFetch(input, { ...init, dispatcher: agent });
const fetchImpl = createAuthenticatingFetchWithRetry(trusted, {
  headers: async () => ({ Authorization: `Bearer ${opts.token}` }),
  shouldRetryWithHeaders: async () => undefined,
});
const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [
      new JsonRpcTransportFactory({ fetchImpl }),
      new RestTransportFactory({ fetchImpl }),
      // Over TLS, gRPC trusts the pinned certificate alone too.
      new GrpcTransportFactory(ca ? { grpcChannelCredentials: grpcCredentials.createSsl(Buffer.from(ca)) } : {}),
    ],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    preferredTransports: [opts.binding],
  }),
);
// The HTTP bindings carry the token in the fetch; gRPC in each call's metadata.
const call =
  opts.binding === 'GRPC' ? { serviceParameters: { authorization: `Bearer ${opts.token}` } } : undefined;
const ids = {};
let client;
// The desk as the chosen interface names it: its tenant for gRPC, none where the URL says it.
let tenant = '';

await check('card', async () => {
  // The desk's card lives under its URL (the well-known path joined onto the desk).
  client = await factory.createFromUrl(`${opts.url}/.well-known/agent-card.json`, '');
  const card = await client.getAgentCard(call);
  expect(client.transport.protocolName === opts.binding, `the SDK chose ${client.transport.protocolName}`);
  // One interface per binding for A2A 1.0 (JSON-RPC has a v0.3 one beside it).
  const chosen = card.supportedInterfaces.filter(
    (i) => i.protocolBinding === opts.binding && i.protocolVersion.startsWith('1.'),
  );
  expect(chosen.length === 1, `the card names ${chosen.length} ${opts.binding} 1.x interfaces`);
  const desk = new URL(opts.url).pathname.split('/').pop();
  if (opts.binding === 'GRPC') {
    const { hostname, port } = new URL(opts.url);
    expect(chosen[0].url === `${hostname}:${port}`, `the GRPC interface is at ${chosen[0].url}`);
    expect(chosen[0].tenant === desk, `the GRPC interface names tenant ${chosen[0].tenant}, not the desk ${desk}`);
    tenant = chosen[0].tenant;
  } else {
    expect(chosen[0].url === opts.url, `the ${opts.binding} interface is at ${chosen[0].url}, expected ${opts.url}`);
  }
  if (opts.pin) {
    const ext = card.capabilities?.extensions?.[0]?.params ?? {};
    expect(ext.tlsCertificateSha256 === opts.pin.toUpperCase(), `the card names certificate ${ext.tlsCertificateSha256}`);
  }
  return { name: card.name, transport: client.transport.protocolName, tenant };
});

await check('send', async () => {
  const result = await client.sendMessage(request(message('js interop: send'), true), call);
  expect('status' in result, `SendMessage answered ${JSON.stringify(result)}, expected a Task`);
  expectState(result, TaskState.TASK_STATE_WORKING, 'send');
  ids.sent = result.id;
  ids.sentContext = result.contextId;
  return { taskId: result.id };
});

await check('get', async () => {
  expect(ids.sent, 'needs the task from send');
  const task = await client.getTask({ tenant, id: ids.sent }, call);
  expect(task.id === ids.sent, `GetTask answered ${task.id}`);
  expectState(task, TaskState.TASK_STATE_WORKING, 'get');
  return { taskId: task.id };
});

await check('cancel', async () => {
  expect(ids.sent, 'needs the task from send');
  const task = await client.cancelTask({ tenant, id: ids.sent, metadata: undefined }, call);
  expectState(task, TaskState.TASK_STATE_CANCELED, 'cancel');
  return { taskId: task.id };
});

/** Follow `events` to their end: the last state they named. */
async function lastState(events, first) {
  let last = first;
  for (;;) {
    const next = await withTimeout(events.next(), 'the completion');
    if (next.done) return last;
    const payload = next.value.payload;
    if (payload?.$case === 'statusUpdate') last = payload.value.status.state;
    if (payload?.$case === 'task') last = payload.value.status.state;
  }
}

await check('stream', async () => {
  const text = `js interop: streamed over ${opts.binding}`;
  const events = client.sendMessageStream(request(message(text), false), call);
  const first = await withTimeout(events.next(), 'the first event');
  expect(first.value?.payload?.$case === 'task', `the first event is ${JSON.stringify(first.value)}`);
  const task = first.value.payload.value;
  expectState(task, TaskState.TASK_STATE_WORKING, 'the stream\'s first event');
  process.stdout.write(JSON.stringify({ await: 'worker', request: text, status: 'done', text: 'done, streamed' }) + '\n');
  const last = await lastState(events, task.status.state);
  expect(last === TaskState.TASK_STATE_COMPLETED, `the stream ended at ${stateName(last)}`);
  const got = await client.getTask({ tenant, id: task.id }, call);
  expectState(got, TaskState.TASK_STATE_COMPLETED, 'get after the stream');
  ids.streamed = task.id;
  return { taskId: task.id, last: stateName(last) };
});

await check('resubscribe', async () => {
  // A task sent without waiting, then followed from a subscription: the current Task first,
  // then its end as the worker makes it.
  const text = `js interop: resubscribed over ${opts.binding}`;
  const sent = await client.sendMessage(request(message(text), true), call);
  expect('status' in sent, `SendMessage answered ${JSON.stringify(sent)}, expected a Task`);
  const events = client.resubscribeTask({ tenant, id: sent.id }, call);
  const first = await withTimeout(events.next(), 'the first event');
  expect(first.value?.payload?.$case === 'task', `the first event is ${JSON.stringify(first.value)}`);
  expect(first.value.payload.value.id === sent.id, `the subscription began with task ${first.value.payload.value.id}`);
  expectState(first.value.payload.value, TaskState.TASK_STATE_WORKING, 'the subscription\'s first event');
  process.stdout.write(JSON.stringify({ await: 'worker', request: text, status: 'done', text: 'done, followed' }) + '\n');
  const last = await lastState(events, TaskState.TASK_STATE_WORKING);
  expect(last === TaskState.TASK_STATE_COMPLETED, `the subscription ended at ${stateName(last)}`);
  ids.resubscribed = sent.id;
  return { taskId: sent.id, last: stateName(last) };
});

function listRequest(fields) {
  return {
    tenant,
    contextId: '',
    status: TaskState.TASK_STATE_UNSPECIFIED,
    pageSize: undefined,
    pageToken: '',
    historyLength: undefined,
    statusTimestampAfter: undefined,
    includeArtifacts: undefined,
    ...fields,
  };
}

await check('list', async () => {
  // No filter: this asker's tasks, the ones above among them.
  const all = await client.listTasks(listRequest({}), call);
  const allIds = all.tasks.map((t) => t.id);
  for (const id of [ids.sent, ids.streamed, ids.resubscribed]) {
    expect(id && allIds.includes(id), `ListTasks without a filter misses task ${id}: ${allIds}`);
  }
  // By state: the completed ones, not the canceled one.
  const done = await client.listTasks(listRequest({ status: TaskState.TASK_STATE_COMPLETED }), call);
  const doneIds = done.tasks.map((t) => t.id);
  expect(doneIds.includes(ids.streamed) && doneIds.includes(ids.resubscribed), `completed: ${doneIds}`);
  expect(!doneIds.includes(ids.sent), `the canceled task ${ids.sent} is listed as completed`);
  expect(done.tasks.every((t) => t.status?.state === TaskState.TASK_STATE_COMPLETED), 'a listed task is not completed');
  // By context: the first task's alone.
  const ctx = await client.listTasks(listRequest({ contextId: ids.sentContext }), call);
  expect(ctx.tasks.length === 1 && ctx.tasks[0].id === ids.sent, `context ${ids.sentContext}: ${ctx.tasks.map((t) => t.id)}`);
  // A page of one, then the next page from its token.
  const page = await client.listTasks(listRequest({ pageSize: 1 }), call);
  expect(page.tasks.length === 1 && page.nextPageToken, `a page of one: ${JSON.stringify(page)}`);
  const rest = await client.listTasks(listRequest({ pageSize: 1, pageToken: page.nextPageToken }), call);
  expect(rest.tasks.length === 1 && rest.tasks[0].id !== page.tasks[0].id, 'the second page repeats the first');
  return { all: allIds.length, completed: doneIds.length };
});

if (opts['webhook-host']) {
  await check('push', async () => {
    const sent = await client.sendMessage(request(message('js interop: push'), true), call);
    expect('status' in sent, `SendMessage answered ${JSON.stringify(sent)}, expected a Task`);
    let arrived;
    const first = new Promise((resolve) => {
      arrived = resolve;
    });
    const receive = (req, res) => {
      let body = '';
      req.on('data', (chunk) => {
        body += chunk;
      });
      req.on('end', () => {
        res.writeHead(200, { Connection: 'close' }).end();
        arrived({ headers: req.headers, body: JSON.parse(body || 'null') });
      });
    };
    const tls = Boolean(opts['webhook-cert']);
    const server = tls
      ? https.createServer({ cert: readFileSync(opts['webhook-cert']), key: readFileSync(opts['webhook-key']) }, receive)
      : http.createServer(receive);
    await new Promise((resolve) => server.listen(0, opts['webhook-host'], resolve));
    try {
      const url = `${tls ? 'https' : 'http'}://${opts['webhook-host']}:${server.address().port}/hook`;
      const made = await client.createTaskPushNotificationConfig(
        {
          tenant,
          id: 'js-hook',
          taskId: sent.id,
          url,
          token: 'js-token',
          authentication: { scheme: 'Bearer', credentials: 'js-secret' },
        },
        call,
      );
      expect(made.url === url, `the created config has url ${made.url}`);
      const push = await withTimeout(first, 'the first push');
      expect(push.headers.authorization === 'Bearer js-secret', `push headers ${JSON.stringify(push.headers)}`);
      expect(push.headers['x-a2a-notification-token'] === 'js-token', `push headers ${JSON.stringify(push.headers)}`);
      expect(push.body?.task?.id === sent.id, `the first push is not the task ${sent.id}: ${JSON.stringify(push.body)}`);
      await client.cancelTask({ tenant, id: sent.id, metadata: undefined }, call);
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
