// The UI's only way to the backend. DESIGN §8: one data layer with two transports, picked once
// at start, so components never know whether they run in the tray app's window (Tauri
// commands, in-process, no token in the webview) or in a browser against `taskkeeper serve`
// (the owner HTTP API with a bearer token).

import { invoke as tauriInvoke } from '@tauri-apps/api/core';
import type { ApiErrorBody, TaskView } from './types';

/** A failure the UI can show; `kind` is stable for branching, `message` is for people. */
export class DataError extends Error {
  readonly kind: string;

  constructor(kind: string, message: string) {
    super(message);
    this.name = 'DataError';
    this.kind = kind;
  }
}

/** The owner operations the UI uses. Grows with the owner service (get, settings, actions). */
export interface DataSource {
  readonly transport: 'tauri' | 'http';
  listOpenTasks(): Promise<TaskView[]>;
  /**
   * Tells the app how many tasks the page has drawn, so the app's end-to-end test can check
   * the real window without a WebDriver. Browsers have no one to tell, so it does nothing there.
   */
  reportRendered(count: number): Promise<void>;
}

/** The few browser facilities the data layer touches, injectable so tests need no DOM. */
export interface Env {
  /** True inside the Tauri webview (`window.__TAURI_INTERNALS__` is present). */
  isTauri: boolean;
  invoke: (cmd: string, args?: Record<string, unknown>) => Promise<unknown>;
  fetch: (input: string, init?: RequestInit) => Promise<Response>;
  location: { hash: string; pathname: string; search: string };
  history: { replaceState(data: unknown, unused: string, url?: string): void };
  sessionStorage: { getItem(key: string): string | null; setItem(key: string, value: string): void };
}

const TOKEN_KEY = 'taskkeeper.token';

/** Builds the Env from the real window. */
export function browserEnv(): Env {
  return {
    isTauri: '__TAURI_INTERNALS__' in window,
    invoke: (cmd, args) => tauriInvoke(cmd, args),
    fetch: (input, init) => window.fetch(input, init),
    location: window.location,
    history: window.history,
    sessionStorage: window.sessionStorage,
  };
}

/** Picks the transport once; call at start and hand the result to the components. */
export function createDataSource(env: Env): DataSource {
  return env.isTauri ? tauriSource(env) : httpSource(env, takeToken(env));
}

function tauriSource(env: Env): DataSource {
  const call = async <T>(cmd: string, args?: Record<string, unknown>): Promise<T> => {
    try {
      return (await env.invoke(cmd, args)) as T;
    } catch (err) {
      throw fromInvokeError(err);
    }
  };
  return {
    transport: 'tauri',
    listOpenTasks: async () => expectTasks(await call<unknown>('list_open_tasks')),
    reportRendered: (count) => call<void>('ui_rendered', { count }),
  };
}

function httpSource(env: Env, token: string | null): DataSource {
  const get = async (path: string): Promise<unknown> => {
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (token !== null) headers.Authorization = `Bearer ${token}`;
    let res: Response;
    try {
      res = await env.fetch(path, { headers });
    } catch (err) {
      throw new DataError('unreachable', `Can't reach the Taskkeeper daemon (${describe(err)}).`);
    }
    if (!res.ok) throw await fromHttpError(res, token !== null);
    try {
      return await res.json();
    } catch {
      throw new DataError('protocol', `The daemon answered ${path} with something that is not JSON.`);
    }
  };
  return {
    transport: 'http',
    listOpenTasks: async () => {
      const body = await get('/api/tasks?state=open');
      return expectTasks(isRecord(body) ? body.tasks : undefined);
    },
    reportRendered: async () => {},
  };
}

/**
 * The owner token arrives in the URL fragment (`#token=...`), which browsers never send to the
 * server. Move it into sessionStorage and drop it from the address bar so it doesn't end up in
 * history, bookmarks or screenshots; a reload then still finds it.
 */
export function takeToken(env: Env): string | null {
  const fragment = env.location.hash.startsWith('#') ? env.location.hash.slice(1) : env.location.hash;
  const params = new URLSearchParams(fragment);
  const fromUrl = params.get('token');
  if (fromUrl !== null && fromUrl !== '') {
    env.sessionStorage.setItem(TOKEN_KEY, fromUrl);
    params.delete('token');
    const rest = params.toString();
    env.history.replaceState(null, '', env.location.pathname + env.location.search + (rest ? `#${rest}` : ''));
    return fromUrl;
  }
  return env.sessionStorage.getItem(TOKEN_KEY);
}

async function fromHttpError(res: Response, hadToken: boolean): Promise<DataError> {
  let body: unknown = null;
  try {
    body = await res.json();
  } catch {
    // Not every failure comes from the daemon (a proxy, a crash); fall back to the status line.
  }
  if (res.status === 401 && !hadToken) {
    // The daemon's own message can't know why the token is missing; this page does.
    return new DataError('unauthorized', 'No owner token. Open the link that `taskkeeper serve` printed.');
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

function expectTasks(value: unknown): TaskView[] {
  if (!Array.isArray(value)) throw new DataError('protocol', 'The daemon sent a task list in an unknown shape.');
  return value as TaskView[];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

function isErrorBody(value: unknown): value is ApiErrorBody {
  return isRecord(value) && typeof value.kind === 'string' && typeof value.message === 'string';
}

function describe(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'string') return err;
  return String(err);
}
