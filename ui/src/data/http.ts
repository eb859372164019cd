// A browser's transport: the owner HTTP API with the bearer token, and its event stream
// (`/api/events`), read with `fetch` and followed across drops.

import { createSseParser, type SseEvent } from '../sse';
import { DataError, unreachable } from './errors';
import {
  deliverNotice,
  deliverSettings,
  deliverTask,
  expectAgentChange,
  expectAgents,
  expectNetwork,
  expectArray,
  expectCatalogue,
  expectDesk,
  expectDetail,
  expectDigest,
  expectSession,
  expectSessions,
  expectSettings,
  expectTask,
  expectTasks,
  fromHttpError,
  isRecord,
  messageOf,
} from './decode';
import { tokenOf, withBearer, type SignIn } from './signin';
import type { DataSource, Env, LiveListener } from './source';
import type { CancelRequest, ConnectRequest, DeskChange, DeskView, PermissionAnswer } from '../types';

export function httpSource(env: Env, signedIn: Promise<SignIn>): DataSource {
  const request = async (method: 'GET' | 'POST' | 'PUT' | 'PATCH', path: string, body?: unknown): Promise<unknown> => {
    const token = tokenOf(await signedIn);
    const headers = (extra: Record<string, string>) => withBearer(token, extra);
    const init: RequestInit = { method, headers: headers({ Accept: 'application/json' }) };
    if (body !== undefined) {
      init.headers = headers({ Accept: 'application/json', 'Content-Type': 'application/json' });
      init.body = JSON.stringify(body);
    }
    let res: Response;
    try {
      res = await env.fetch(path, init);
    } catch (err) {
      throw unreachable(err);
    }
    if (!res.ok) throw await fromHttpError(res, token !== null);
    try {
      return await res.json();
    } catch {
      throw new DataError('protocol', `The daemon answered ${path} with something that is not JSON.`);
    }
  };
  const get = (path: string) => request('GET', path);
  const post = (path: string, body: unknown = {}) => request('POST', path, body);
  const task = (id: string, action: string) => `/api/tasks/${encodeURIComponent(id)}/${action}`;
  const session = (id: string, action: string) => `/api/sessions/${encodeURIComponent(id)}/${action}`;
  const desk = (name: string) => `/api/desks/${encodeURIComponent(name)}`;
  const settingsOf = (body: unknown) => expectSettings(isRecord(body) ? body.settings : undefined);

  return {
    transport: 'http',
    canAutostart: false,
    listTasks: async (state) => {
      const body = await get(`/api/tasks?state=${state}`);
      return expectTasks(isRecord(body) ? body.tasks : undefined);
    },
    getTask: async (id) => expectDetail(await get(`/api/tasks/${encodeURIComponent(id)}`)),
    cancelTask: async (id, reason) =>
      expectTask(await post(task(id, 'cancel'), (reason === null ? {} : { reason }) satisfies CancelRequest)),
    remindTask: async (id) => expectTask(await post(task(id, 'remind'))),
    resumeTask: async (id) => expectTask(await post(task(id, 'resume'))),
    listDesks: async () => {
      const body = await get('/api/desks');
      return expectArray<DeskView>(isRecord(body) ? body.desks : undefined, 'desk list');
    },
    listSessions: async () => {
      const body = await get('/api/sessions');
      return expectSessions(isRecord(body) ? body.sessions : undefined);
    },
    setDeliverCommand: async (name, command) =>
      expectDesk(await request('PATCH', desk(name), { deliverCommand: command } satisfies DeskChange)),
    setAutoLaunch: async (name, on) =>
      expectDesk(await request('PATCH', desk(name), { autoLaunch: on } satisfies DeskChange)),
    getDigest: async () => expectDigest(await get('/api/digest')),
    takeDigest: async () => expectDigest(await post('/api/digest')),
    pauseSession: async (id) => expectSession(await post(session(id, 'pause'))),
    resumeSession: async (id) => expectSession(await post(session(id, 'resume'))),
    launchSession: async (name) => expectSession(await post(`${desk(name)}/launch`)),
    stopSession: async (id) => {
      await post(session(id, 'stop'));
    },
    answerPermission: async (id, allow, message, requestId) => {
      const text = messageOf(message);
      return expectSession(
        await post(session(id, 'permission'), {
          allow,
          ...(text === null ? {} : { message: text }),
          ...(requestId === undefined ? {} : { requestId }),
        } satisfies PermissionAnswer),
      );
    },
    getSettings: async () => settingsOf(await get('/api/settings')),
    getSettingsCatalogue: async () => {
      const body = await get('/api/settings/catalogue');
      return expectCatalogue(isRecord(body) ? body.settings : undefined);
    },
    saveSettings: async (changes) => settingsOf(await request('PUT', '/api/settings', changes)),
    pauseReminders: async () => settingsOf(await post('/api/reminders/pause')),
    resumeReminders: async () => settingsOf(await post('/api/reminders/resume')),
    getNetwork: async () => expectNetwork(await get('/api/network')),
    listAgents: async () => {
      const body = await get('/api/agents');
      return expectAgents(isRecord(body) ? body.agents : undefined);
    },
    connectAgent: async (agent, force = false) =>
      expectAgentChange(
        await post(`/api/agents/${encodeURIComponent(agent)}/connect`, (force ? { force } : {}) satisfies Partial<ConnectRequest>),
      ),
    disconnectAgent: async (agent) => expectAgentChange(await post(`/api/agents/${encodeURIComponent(agent)}/disconnect`)),
    getAutostart: () => Promise.reject(new DataError('unsupported', 'Autostart is a setting of the tray app.')),
    setAutostart: () => Promise.reject(new DataError('unsupported', 'Autostart is a setting of the tray app.')),
    subscribe: (listener) => followEvents(env, signedIn, listener),
    reportRendered: async () => {},
    reportFirstFrame: async () => {},
  };
}

/** The longest wait between two attempts to get the event stream back. */
export const MAX_RECONNECT_MS = 15_000;

/**
 * Reads `/api/events` with `fetch` (an `EventSource` cannot send the bearer header) and keeps
 * it open: after a drop it reconnects with a growing delay, and after every (re)connect asks
 * the UI to re-read, since what happened in between is not replayed. A refused token stops it.
 */
function followEvents(env: Env, signedIn: Promise<SignIn>, listener: LiveListener): () => void {
  const controller = new AbortController();
  let stopped = false;
  let attempt = 0;
  let timer: unknown;
  let session: SignIn | null = null;

  const retry = (error: DataError) => {
    if (stopped) return;
    listener.onStatus({ state: 'reconnecting', error });
    const delay = Math.min(MAX_RECONNECT_MS, 1000 * 2 ** attempt);
    attempt += 1;
    timer = env.setTimeout(() => void connect(), delay);
  };

  const connect = async () => {
    if (stopped) return;
    listener.onStatus({ state: 'connecting' });
    // Decided once, before the first attempt; a reconnect goes straight to the daemon.
    if (session === null) {
      session = await signedIn;
      if (stopped) return;
    }
    if (session.token === null && session.refusal !== null) {
      listener.onStatus({ state: 'failed', error: session.refusal });
      return;
    }
    const hadToken = session.token !== null;
    const headers = withBearer(session.token, { Accept: 'text/event-stream' });
    let res: Response;
    try {
      res = await env.fetch('/api/events', { headers, signal: controller.signal });
    } catch (err) {
      return retry(unreachable(err));
    }
    if (!res.ok) {
      const error = await fromHttpError(res, hadToken);
      if (error.kind === 'unauthorized' || error.kind === 'forbidden') {
        listener.onStatus({ state: 'failed', error });
        return;
      }
      return retry(error);
    }
    if (res.body === null) {
      listener.onStatus({ state: 'failed', error: new DataError('protocol', 'This browser cannot read the live event stream.') });
      return;
    }
    attempt = 0;
    listener.onStatus({ state: 'live' });
    listener.onResync();
    const parser = createSseParser((event) => deliverSse(event, listener));
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.push(decoder.decode(value, { stream: true }));
      }
    } catch {
      // A reset connection or our own abort; either way the loop below decides.
    }
    retry(new DataError('unreachable', 'The live connection to the daemon ended; reconnecting.'));
  };

  void connect();
  return () => {
    stopped = true;
    env.clearTimeout(timer);
    controller.abort();
  };
}

function deliverSse(event: SseEvent, listener: LiveListener): void {
  if (event.type === 'resync') return listener.onResync();
  // A hint to re-read `/api/sessions`; whatever its data says (today `{}`) carries nothing.
  if (event.type === 'sessions') return listener.onSessions();
  let payload: unknown;
  try {
    payload = JSON.parse(event.data);
  } catch {
    console.warn(`ignoring a ${event.type} event that is not JSON`);
    return;
  }
  if (event.type === 'task') deliverTask(payload, listener);
  else if (event.type === 'notice') deliverNotice(payload, listener);
  else if (event.type === 'settings') deliverSettings(payload, listener);
}
