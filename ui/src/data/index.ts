// The UI's only way to the backend. design.md §8: one data layer with two transports, picked once
// at start, so components never know whether they run in the tray app's window (Tauri
// commands and events, in-process, no token in the webview) or in a browser against
// `taskkeeper serve --ui` (the owner HTTP API with a bearer token, and its event stream).
//
// One job a file: source.ts the contract (`DataSource`, what the views call and hear),
// tauri.ts and http.ts (with signin.ts) the two transports, decode.ts the shapes they check,
// errors.ts the one failure the views see. This file picks the transport.

import { invoke as tauriInvoke } from '@tauri-apps/api/core';
import { listen as tauriListen } from '@tauri-apps/api/event';
import { httpSource } from './http';
import { signIn } from './signin';
import type { DataSource, Env } from './source';
import { tauriSource } from './tauri';

export { DataError, asDataError } from './errors';
export { expectSettings, isDesktopOnlyNotice, isNotice } from './decode';
export { CODE_REFUSED, SESSION_PATH, signIn } from './signin';
export { MAX_RECONNECT_MS } from './http';
export {
  TAURI_NAVIGATE_EVENT,
  TAURI_NOTICE_EVENT,
  TAURI_SESSIONS_EVENT,
  TAURI_SETTINGS_EVENT,
  TAURI_TASK_EVENT,
} from './tauri';
export type { DataSource, Env, LiveListener, LiveStatus, NavigateRequest, TaskListState } from './source';

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
