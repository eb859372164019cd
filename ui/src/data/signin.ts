// How a browser page signs in (the HTTP transport's part): the owner token from a one-time
// code (which `taskkeeper open`'s private sign-in page, or `open --print`, puts in the
// fragment), a hand-typed `#token=`, or the tab's session storage; and the bearer header.

import { DataError, unreachable } from './errors';
import { fromHttpError, isRecord, protocol } from './decode';
import type { Env } from './source';
import type { UiSessionView } from '../types';

const TOKEN_KEY = 'taskkeeper.token';
/** Where the page trades `taskkeeper open`'s one-time code for the owner token (no token needed). */
export const SESSION_PATH = '/ui/session';

/** What the page signs in with: the owner token, or, when it has none, why (or nothing). */
export interface SignIn {
  token: string | null;
  /** Set when a sign-in code was refused: every call then fails with this. */
  refusal: DataError | null;
}

/** The token for a call; a refused sign-in code fails the call with its message. */
export function tokenOf(session: SignIn): string | null {
  if (session.token === null && session.refusal !== null) throw session.refusal;
  return session.token;
}

export function withBearer(token: string | null, extra: Record<string, string>): Record<string, string> {
  return token === null ? extra : { ...extra, Authorization: `Bearer ${token}` };
}

/**
 * How a browser page gets the owner token. `taskkeeper open` starts the browser on a private
 * sign-in page (a file only the owner can read: the browser's command line, which every local
 * user can read, holds just its path), which sends the browser here with a one-time code in
 * the fragment (`#code=...`); the page trades it at once at `POST /ui/session` for the token
 * (the daemon removes the sign-in page then). A `#token=...` still works for an address typed or pasted by hand (nothing puts it on
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
