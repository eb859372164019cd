// The UI's only way to the backend. design.md §8: one data layer with two transports, picked once
// at start, so components never know whether they run in the tray app's window (Tauri
// commands and events, in-process, no token in the webview) or in a browser against
// `taskkeeper serve --ui` (the owner HTTP API with a bearer token, and its event stream).
//
// Every owner operation exists once in `DataSource`; each transport implements all of them.
// Both transports front the same owner service in Rust, so they return the same shapes
// (types.ts) and the same `{kind, message}` errors.

import { invoke as tauriInvoke } from '@tauri-apps/api/core';
import { listen as tauriListen } from '@tauri-apps/api/event';
import { createSseParser, type SseEvent } from './sse';
import type {
  AgentChange,
  AgentView,
  OwnerError,
  DeskView,
  DigestView,
  WindowNotice,
  PermissionView,
  SessionView,
  SettingsMap,
  TaskDetail,
  TaskView,
  UiSessionView,
} from './types';

/** A failure the UI can show; `kind` is stable for branching, `message` is for people. */
export class DataError extends Error {
  readonly kind: string;

  constructor(kind: string, message: string) {
    super(message);
    this.name = 'DataError';
    this.kind = kind;
  }
}

/** Anything thrown, as a DataError (components only ever show DataErrors). */
export function asDataError(err: unknown): DataError {
  return err instanceof DataError ? err : new DataError('unknown', describe(err));
}

export type TaskListState = 'open' | 'ended';

/** How the live feed is doing; the window shows it so a silent list is never mistaken for calm. */
export type LiveStatus =
  | { state: 'connecting' }
  | { state: 'live' }
  /** Lost; trying again by itself. */
  | { state: 'reconnecting'; error: DataError }
  /** Will not come back by itself (refused token, no event support). */
  | { state: 'failed'; error: DataError };

export interface LiveListener {
  /** A task changed (the TaskView after the change). */
  onTask(task: TaskView): void;
  onNotice(notice: WindowNotice): void;
  /** A setting changed (here, in another window, or with the CLI): every setting after it. */
  onSettings(settings: SettingsMap): void;
  /**
   * Some session changed in a way the session list shows (activity, a headless session's
   * permission request, a launch, an end): re-read the sessions. A hint with no payload; the
   * sender coalesces bursts (at most one per 250 ms).
   */
  onSessions(): void;
  /**
   * Changes may have been missed (the feed (re)connected, or it lagged): re-read what is shown.
   * Also called once the feed is up, since changes made before it was can't be replayed.
   */
  onResync(): void;
  onStatus(status: LiveStatus): void;
  /** The app asks the window to show a view (its tray's Settings item, a clicked notification). */
  onNavigate(to: NavigateRequest): void;
}

/** Where the app wants the window to go (`taskkeeper://navigate`); browsers never ask. */
export type NavigateRequest = { kind: 'view'; view: string } | { kind: 'task'; id: string };

/** Every owner operation the UI uses. */
export interface DataSource {
  readonly transport: 'tauri' | 'http';
  /** Autostart at login is the tray app's; a browser page has nothing to start. */
  readonly canAutostart: boolean;
  listTasks(state: TaskListState): Promise<TaskView[]>;
  getTask(id: string): Promise<TaskDetail>;
  cancelTask(id: string, reason: string | null): Promise<TaskView>;
  /** Remind the session holding this task now, outside the ladder. */
  remindTask(id: string): Promise<TaskView>;
  /** Start a stalled task's ladder again. */
  resumeTask(id: string): Promise<TaskView>;
  listDesks(): Promise<DeskView[]>;
  /** Set the desk's delivery command, or remove it with null; answers the desk after the change. */
  setDeliverCommand(desk: string, command: string | null): Promise<DeskView>;
  /** Turn the desk's launching a headless session by itself on or off; answers the desk. */
  setAutoLaunch(desk: string, on: boolean): Promise<DeskView>;
  /** The digest since the last one taken, without taking it (`GET /api/digest`). */
  getDigest(): Promise<DigestView>;
  /** Take the digest: the next one starts from now (`POST /api/digest`). */
  takeDigest(): Promise<DigestView>;
  listSessions(): Promise<SessionView[]>;
  pauseSession(id: string): Promise<SessionView>;
  resumeSession(id: string): Promise<SessionView>;
  /** Launch a headless Claude Code session at a claude-code desk; answers the new session. */
  launchSession(desk: string): Promise<SessionView>;
  /** Stop a headless session this daemon launched; it ends shortly after. */
  stopSession(id: string): Promise<void>;
  /**
   * Allow or deny the tool a headless session asks for (its `permission`); a denial may say
   * why. Answers the session, its `permission` now null.
   */
  /** With `requestId`, only that request is answered (a newer one is refused with 409). */
  answerPermission(id: string, allow: boolean, message?: string, requestId?: string): Promise<SessionView>;
  getSettings(): Promise<SettingsMap>;
  /** All changes are checked before any is written; returns every setting after the change. */
  saveSettings(changes: SettingsMap): Promise<SettingsMap>;
  pauseReminders(): Promise<SettingsMap>;
  resumeReminders(): Promise<SettingsMap>;
  /** The agents Taskkeeper can connect (Claude Code today), with what their settings say. */
  listAgents(): Promise<AgentView[]>;
  /**
   * Connect an agent (the same code as `taskkeeper connect`); `force` names a `taskkeeper` in a
   * build directory anyway (refused with kind `conflict` otherwise).
   */
  connectAgent(agent: string, force?: boolean): Promise<AgentChange>;
  /** Put the agent's settings back as they were before Connect. */
  disconnectAgent(agent: string): Promise<AgentChange>;
  getAutostart(): Promise<boolean>;
  setAutostart(enabled: boolean): Promise<boolean>;
  /** Follow task, settings and session changes and notices; returns the function that stops following. */
  subscribe(listener: LiveListener): () => void;
  /**
   * Tells the app how many open tasks the page has drawn, so the app's end-to-end test can
   * check the real window without a WebDriver. Browsers have no one to tell; it does nothing.
   */
  reportRendered(count: number): Promise<void>;
}

/** The few browser facilities the data layer touches, injectable so tests need no DOM. */
export interface Env {
  /** True inside the Tauri webview (`window.__TAURI_INTERNALS__` is present). */
  isTauri: boolean;
  invoke: (cmd: string, args?: Record<string, unknown>) => Promise<unknown>;
  /** Calls `handler` with each payload of the Tauri event; resolves to the unlisten function. */
  listen: (event: string, handler: (payload: unknown) => void) => Promise<() => void>;
  fetch: (input: string, init?: RequestInit) => Promise<Response>;
  location: { hash: string; pathname: string; search: string };
  history: { replaceState(data: unknown, unused: string, url?: string): void };
  sessionStorage: { getItem(key: string): string | null; setItem(key: string, value: string): void };
  /** Reconnect delays; tests make them instant. */
  setTimeout: (fn: () => void, ms: number) => unknown;
  clearTimeout: (handle: unknown) => void;
}

const TOKEN_KEY = 'taskkeeper.token';
/** Where the page trades `taskkeeper open`'s one-time code for the owner token (no token needed). */
export const SESSION_PATH = '/ui/session';

/** The Tauri events the app emits, mirroring the SSE stream's `task`, `notice`, `settings` and `sessions`. */
export const TAURI_TASK_EVENT = 'taskkeeper://task';
export const TAURI_NOTICE_EVENT = 'taskkeeper://notice';
export const TAURI_SETTINGS_EVENT = 'taskkeeper://settings';
/** A hint that the session list changed; its payload (`{}` or null) means nothing. */
export const TAURI_SESSIONS_EVENT = 'taskkeeper://sessions';
/** The app's request to show a view: `"settings"` or `{"task": id}`. */
export const TAURI_NAVIGATE_EVENT = 'taskkeeper://navigate';

/** Builds the Env from the real window. */
export function browserEnv(): Env {
  return {
    isTauri: '__TAURI_INTERNALS__' in window,
    invoke: (cmd, args) => tauriInvoke(cmd, args),
    listen: (event, handler) => tauriListen(event, (e) => handler(e.payload)),
    fetch: (input, init) => window.fetch(input, init),
    location: window.location,
    history: window.history,
    sessionStorage: window.sessionStorage,
    setTimeout: (fn, ms) => window.setTimeout(fn, ms),
    clearTimeout: (handle) => window.clearTimeout(handle as number),
  };
}

/** Picks the transport once; call at start and hand the result to the components. */
export function createDataSource(env: Env): DataSource {
  return env.isTauri ? tauriSource(env) : httpSource(env, signIn(env));
}

// ---- the tray app: Tauri commands and events ----

function tauriSource(env: Env): DataSource {
  const call = async (cmd: string, args?: Record<string, unknown>): Promise<unknown> => {
    try {
      return await env.invoke(cmd, args);
    } catch (err) {
      throw fromInvokeError(err);
    }
  };
  // The reminder toggles' answer is not fixed by the contract; the map is read back if absent.
  const settingsAfter = async (cmd: string): Promise<SettingsMap> => {
    const answer = await call(cmd);
    return answer === null || answer === undefined ? expectSettings(await call('get_settings')) : expectSettings(answer);
  };
  return {
    transport: 'tauri',
    canAutostart: true,
    listTasks: async (state) => expectTasks(await call('list_tasks', { state })),
    getTask: async (id) => expectDetail(await call('get_task', { id })),
    cancelTask: async (id, reason) => expectTask(await call('cancel_task', { id, reason })),
    remindTask: async (id) => expectTask(await call('remind_task', { id })),
    resumeTask: async (id) => expectTask(await call('resume_task', { id })),
    listDesks: async () => expectArray<DeskView>(await call('list_desks'), 'desk list'),
    setDeliverCommand: async (name, command) => expectDesk(await call('set_deliver_command', { name, command })),
    setAutoLaunch: async (name, on) => expectDesk(await call('set_auto_launch', { name, on })),
    getDigest: async () => expectDigest(await call('get_digest', { take: false })),
    takeDigest: async () => expectDigest(await call('get_digest', { take: true })),
    listSessions: async () => expectSessions(await call('list_sessions')),
    pauseSession: async (id) => expectSession(await call('pause_session', { id })),
    resumeSession: async (id) => expectSession(await call('resume_session', { id })),
    launchSession: async (desk) => expectSession(await call('launch_session', { desk })),
    stopSession: async (id) => {
      await call('stop_session', { id });
    },
    answerPermission: async (id, allow, message, requestId) =>
      expectSession(
        await call('answer_permission', {
          id,
          allow,
          message: messageOf(message),
          ...(requestId === undefined ? {} : { requestId }),
        }),
      ),
    getSettings: async () => expectSettings(await call('get_settings')),
    saveSettings: async (changes) => expectSettings(await call('save_settings', { changes })),
    pauseReminders: () => settingsAfter('pause_reminders'),
    resumeReminders: () => settingsAfter('resume_reminders'),
    listAgents: async () => expectAgents(await call('list_agents')),
    connectAgent: async (agent, force = false) => expectAgentChange(await call('connect_agent', { agent, force })),
    disconnectAgent: async (agent) => expectAgentChange(await call('disconnect_agent', { agent })),
    getAutostart: async () => expectEnabled(await call('get_autostart')),
    setAutostart: async (enabled) => {
      const answer = await call('set_autostart', { enabled });
      return typeof answer === 'boolean' || isRecord(answer) ? expectEnabled(answer) : expectEnabled(await call('get_autostart'));
    },
    subscribe: (listener) => {
      let stopped = false;
      let unlisten: (() => void)[] = [];
      listener.onStatus({ state: 'connecting' });
      Promise.all([
        env.listen(TAURI_TASK_EVENT, (payload) => deliverTask(payload, listener)),
        env.listen(TAURI_NOTICE_EVENT, (payload) => deliverNotice(payload, listener)),
        env.listen(TAURI_SETTINGS_EVENT, (payload) => deliverSettings(payload, listener)),
        env.listen(TAURI_SESSIONS_EVENT, () => listener.onSessions()),
        env.listen(TAURI_NAVIGATE_EVENT, (payload) => deliverNavigate(payload, listener)),
      ]).then(
        (fns) => {
          if (stopped) return fns.forEach((f) => f());
          unlisten = fns;
          listener.onStatus({ state: 'live' });
          listener.onResync();
        },
        (err: unknown) => {
          if (!stopped) listener.onStatus({ state: 'failed', error: fromInvokeError(err) });
        },
      );
      return () => {
        stopped = true;
        unlisten.forEach((f) => f());
      };
    },
    reportRendered: async (count) => {
      await call('ui_rendered', { count });
    },
  };
}

// ---- a browser: the owner HTTP API ----

function httpSource(env: Env, signedIn: Promise<SignIn>): DataSource {
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
    cancelTask: async (id, reason) => expectTask(await post(task(id, 'cancel'), reason === null ? {} : { reason })),
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
    setDeliverCommand: async (name, command) => expectDesk(await request('PATCH', desk(name), { deliverCommand: command })),
    setAutoLaunch: async (name, on) => expectDesk(await request('PATCH', desk(name), { autoLaunch: on })),
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
        }),
      );
    },
    getSettings: async () => settingsOf(await get('/api/settings')),
    saveSettings: async (changes) => settingsOf(await request('PUT', '/api/settings', changes)),
    pauseReminders: async () => settingsOf(await post('/api/reminders/pause')),
    resumeReminders: async () => settingsOf(await post('/api/reminders/resume')),
    listAgents: async () => {
      const body = await get('/api/agents');
      return expectAgents(isRecord(body) ? body.agents : undefined);
    },
    connectAgent: async (agent, force = false) =>
      expectAgentChange(await post(`/api/agents/${encodeURIComponent(agent)}/connect`, force ? { force } : {})),
    disconnectAgent: async (agent) => expectAgentChange(await post(`/api/agents/${encodeURIComponent(agent)}/disconnect`)),
    getAutostart: () => Promise.reject(new DataError('unsupported', 'Autostart is a setting of the tray app.')),
    setAutostart: () => Promise.reject(new DataError('unsupported', 'Autostart is a setting of the tray app.')),
    subscribe: (listener) => followEvents(env, signedIn, listener),
    reportRendered: async () => {},
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

function deliverTask(payload: unknown, listener: LiveListener): void {
  if (isTaskView(payload)) listener.onTask(payload);
  else console.warn('ignoring a task event in an unknown shape');
}

function deliverNotice(payload: unknown, listener: LiveListener): void {
  if (isNotice(payload)) listener.onNotice(payload);
  else if (!isDesktopOnlyNotice(payload)) console.warn('ignoring a notice in an unknown shape');
}

/**
 * A notice only the desktop shows (`blocked`, `finished`: the app's notifications, each kind a
 * setting); the window's lists already show the task's change, so it lists none of them.
 */
export function isDesktopOnlyNotice(value: unknown): boolean {
  return isRecord(value) && (value.kind === 'blocked' || value.kind === 'finished') && isTaskView(value.task);
}

/** A notice of a kind this UI shows, in the shape the daemon sends (`notify.rs`). */
export function isNotice(value: unknown): value is WindowNotice {
  if (!isRecord(value)) return false;
  switch (value.kind) {
    case 'stalled':
      return isTaskView(value.task);
    case 'session-ended':
      return typeof value.session === 'string' && typeof value.desk === 'string' && typeof value.openTasks === 'number';
    case 'permission-asked':
      return (
        typeof value.session === 'string' &&
        typeof value.desk === 'string' &&
        typeof value.tool === 'string' &&
        (value.description === null || typeof value.description === 'string')
      );
    case 'digest':
      return (
        isRecord(value.counts) &&
        ['stalled', 'finished', 'waitingOnOwner', 'ackPending', 'reminders'].every(
          (k) => typeof (value.counts as Record<string, unknown>)[k] === 'number',
        )
      );
    default:
      return false;
  }
}

function deliverSettings(payload: unknown, listener: LiveListener): void {
  let settings: SettingsMap;
  try {
    settings = expectSettings(payload);
  } catch {
    console.warn('ignoring a settings event in an unknown shape');
    return;
  }
  listener.onSettings(settings);
}

function deliverNavigate(payload: unknown, listener: LiveListener): void {
  if (typeof payload === 'string' && payload !== '') listener.onNavigate({ kind: 'view', view: payload });
  else if (isRecord(payload) && typeof payload.task === 'string') listener.onNavigate({ kind: 'task', id: payload.task });
  else console.warn('ignoring a navigate request in an unknown shape');
}

// ---- signing in ----

/** What the page signs in with: the owner token, or, when it has none, why (or nothing). */
interface SignIn {
  token: string | null;
  /** Set when a sign-in code was refused: every call then fails with this. */
  refusal: DataError | null;
}

/** The token for a call; a refused sign-in code fails the call with its message. */
function tokenOf(session: SignIn): string | null {
  if (session.token === null && session.refusal !== null) throw session.refusal;
  return session.token;
}

function withBearer(token: string | null, extra: Record<string, string>): Record<string, string> {
  return token === null ? extra : { ...extra, Authorization: `Bearer ${token}` };
}

/**
 * How a browser page gets the owner token. `taskkeeper open` puts a one-time code in the
 * fragment (`#code=...`), because the browser's command line, where the address goes, is
 * readable by every local user; the page trades it at once at `POST /ui/session` for the
 * token. A `#token=...` still works for an address typed or pasted by hand (nothing puts it on
 * a command line then), but `taskkeeper open` never makes one. Either way it leaves the
 * address bar at once, before any request, so it doesn't end up in history, bookmarks or
 * screenshots, and the token goes to sessionStorage, where a reload finds it.
 */
export function signIn(env: Env): Promise<SignIn> {
  const fragment = env.location.hash.startsWith('#') ? env.location.hash.slice(1) : env.location.hash;
  const params = new URLSearchParams(fragment);
  const code = params.get('code');
  const token = params.get('token');
  if (code !== null || token !== null) {
    params.delete('code');
    params.delete('token');
    const rest = params.toString();
    env.history.replaceState(null, '', env.location.pathname + env.location.search + (rest ? `#${rest}` : ''));
  }
  if (code !== null && code !== '') return exchangeCode(env, code);
  if (token !== null && token !== '') {
    env.sessionStorage.setItem(TOKEN_KEY, token);
    return Promise.resolve({ token, refusal: null });
  }
  return Promise.resolve({ token: env.sessionStorage.getItem(TOKEN_KEY), refusal: null });
}

/** Shown when the daemon refuses the code: it was spent (this address was opened before) or lapsed. */
export const CODE_REFUSED =
  'This sign-in link has expired or was already used (each one works once, for a minute). Run `taskkeeper open` again.';

async function exchangeCode(env: Env, code: string): Promise<SignIn> {
  let res: Response;
  try {
    res = await env.fetch(SESSION_PATH, {
      method: 'POST',
      headers: { Accept: 'application/json', 'Content-Type': 'application/json' },
      body: JSON.stringify({ code }),
    });
  } catch (err) {
    return { token: null, refusal: unreachable(err) };
  }
  if (res.status === 401) return { token: null, refusal: new DataError('unauthorized', CODE_REFUSED) };
  if (!res.ok) return { token: null, refusal: await fromHttpError(res, false) };
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    body = null;
  }
  if (!isUiSession(body)) return { token: null, refusal: protocol('sign-in answer') };
  env.sessionStorage.setItem(TOKEN_KEY, body.token);
  return { token: body.token, refusal: null };
}

function isUiSession(value: unknown): value is UiSessionView {
  return isRecord(value) && typeof value.token === 'string' && value.token !== '';
}

// ---- errors ----

function unreachable(err: unknown): DataError {
  return new DataError(
    'unreachable',
    `Can't reach the Taskkeeper daemon (${describe(err)}). Is \`taskkeeper serve --ui\` still running?`,
  );
}

async function fromHttpError(res: Response, hadToken: boolean): Promise<DataError> {
  let body: unknown = null;
  try {
    body = await res.json();
  } catch {
    // Not every failure comes from the daemon (a proxy, a crash); fall back to the status line.
  }
  // The daemon's own 401 text points at the token file; a page can say what to do instead.
  if (res.status === 401) {
    return new DataError(
      'unauthorized',
      hadToken
        ? "The daemon refused this page's owner token. Open the UI again with `taskkeeper open`."
        : 'This page has no owner token. Open the UI with `taskkeeper open`; it signs the page in.',
    );
  }
  const inner = isRecord(body) ? body.error : undefined;
  if (isErrorBody(inner)) return new DataError(inner.kind, inner.message);
  return new DataError('http', `The daemon answered HTTP ${res.status} ${res.statusText}`.trim() + '.');
}

function fromInvokeError(err: unknown): DataError {
  if (isErrorBody(err)) return new DataError(err.kind, err.message);
  // Tauri itself rejects with a plain string (unknown command, denied by the capability).
  return new DataError('ipc', describe(err));
}

// ---- shapes: trust the daemon's types, but fail loudly on a different shape ----

function protocol(what: string): DataError {
  return new DataError('protocol', `The daemon sent a ${what} in an unknown shape.`);
}

function expectArray<T>(value: unknown, what: string): T[] {
  if (!Array.isArray(value)) throw protocol(what);
  return value as T[];
}

function expectAgent(value: unknown): AgentView {
  const strings = (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === 'string');
  if (
    !isRecord(value) ||
    typeof value.agent !== 'string' ||
    typeof value.name !== 'string' ||
    typeof value.connected !== 'boolean' ||
    typeof value.working !== 'boolean' ||
    !strings(value.problems) ||
    !strings(value.files)
  ) {
    throw protocol('agent');
  }
  return value as unknown as AgentView;
}

function expectAgents(value: unknown): AgentView[] {
  return expectArray<unknown>(value, 'agent list').map(expectAgent);
}

function expectAgentChange(value: unknown): AgentChange {
  if (!isRecord(value) || !Array.isArray(value.changes)) throw protocol('agent change');
  return { changes: value.changes.map(String), agent: expectAgent(value.agent) };
}

function expectDesk(value: unknown): DeskView {
  if (!isRecord(value) || typeof value.name !== 'string' || !(value.deliverCommand === null || typeof value.deliverCommand === 'string')) {
    throw protocol('desk');
  }
  return value as unknown as DeskView;
}

/**
 * A session, its `permission` checked: absent (a daemon from before the field) reads as null,
 * anything but null or a request in the documented shape is refused.
 */
function expectSession(value: unknown): SessionView {
  if (!isRecord(value) || typeof value.id !== 'string' || typeof value.desk !== 'string') throw protocol('session');
  const asked = value.permission ?? null;
  if (asked !== null && !isPermissionRequest(asked)) throw protocol('session');
  const permission = asked === null ? null : { ...asked, description: asked.description ?? null };
  return { ...value, permission } as unknown as SessionView;
}

function expectSessions(value: unknown): SessionView[] {
  return expectArray<unknown>(value, 'session list').map((s) => {
    try {
      return expectSession(s);
    } catch {
      throw protocol('session list');
    }
  });
}

function isPermissionRequest(value: unknown): value is PermissionView {
  return (
    isRecord(value) &&
    typeof value.requestId === 'string' &&
    typeof value.tool === 'string' &&
    typeof value.input === 'string' &&
    (value.description === null || value.description === undefined || typeof value.description === 'string')
  );
}

/** A denial's message as sent: trimmed, and none rather than blank. */
function messageOf(message: string | undefined): string | null {
  const text = message?.trim() ?? '';
  return text === '' ? null : text;
}

function expectTasks(value: unknown): TaskView[] {
  const tasks = expectArray<unknown>(value, 'task list');
  if (!tasks.every(isTaskView)) throw protocol('task list');
  return tasks as TaskView[];
}

function expectDigest(value: unknown): DigestView {
  const lists = ['stalled', 'finished', 'waitingOnOwner', 'ackPending', 'reminders'];
  if (!isRecord(value) || !isRecord(value.counts) || !lists.every((k) => Array.isArray(value[k]))) {
    throw protocol('digest');
  }
  return value as unknown as DigestView;
}

function expectTask(value: unknown): TaskView {
  if (!isTaskView(value)) throw protocol('task');
  return value;
}

function expectDetail(value: unknown): TaskDetail {
  if (!isRecord(value) || !Array.isArray(value.history) || !Array.isArray(value.artifacts) || !isTaskView(value)) {
    throw protocol('task');
  }
  return value as unknown as TaskDetail;
}

/** Settings as text; the daemon sends strings, but a number or boolean reads the same. */
export function expectSettings(value: unknown): SettingsMap {
  const map = isRecord(value) && isRecord(value.settings) ? value.settings : value;
  if (!isRecord(map) || Array.isArray(map)) throw protocol('settings map');
  const out: SettingsMap = {};
  for (const [key, v] of Object.entries(map)) {
    if (typeof v === 'string') out[key] = v;
    else if (typeof v === 'number' || typeof v === 'boolean') out[key] = String(v);
    else throw protocol('settings map');
  }
  return out;
}

function expectEnabled(value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  if (isRecord(value) && typeof value.enabled === 'boolean') return value.enabled;
  throw protocol('autostart answer');
}

function isTaskView(value: unknown): value is TaskView {
  return (
    isRecord(value) &&
    typeof value.id === 'string' &&
    typeof value.desk === 'string' &&
    typeof value.state === 'string' &&
    typeof value.version === 'number'
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

function isErrorBody(value: unknown): value is OwnerError {
  return isRecord(value) && typeof value.kind === 'string' && typeof value.message === 'string';
}

function describe(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'string') return err;
  return String(err);
}
