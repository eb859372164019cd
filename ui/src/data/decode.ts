// What comes back from the daemon, checked before a view sees it: trust the daemon's types
// (generated from the Rust ones), but fail loudly on a different shape rather than draw
// nonsense. Also what goes the other way in both transports' shapes (`messageOf`), and the
// live payloads handed on to the listener (`deliver*`), which both transports share.

import { DataError, describe } from './errors';
import type { LiveListener } from './source';
import type {
  AgentChange,
  AgentView,
  NetworkView,
  DeskView,
  DigestView,
  OwnerError,
  PermissionView,
  SessionView,
  SettingView,
  SettingsMap,
  TaskDetail,
  TaskView,
  WindowNotice,
} from '../types';

export function deliverTask(payload: unknown, listener: LiveListener): void {
  if (isTaskView(payload)) listener.onTask(payload);
  else console.warn('ignoring a task event in an unknown shape');
}

export function deliverNotice(payload: unknown, listener: LiveListener): void {
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

export function deliverSettings(payload: unknown, listener: LiveListener): void {
  let settings: SettingsMap;
  try {
    settings = expectSettings(payload);
  } catch {
    console.warn('ignoring a settings event in an unknown shape');
    return;
  }
  listener.onSettings(settings);
}

export async function fromHttpError(res: Response, hadToken: boolean): Promise<DataError> {
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

export function fromInvokeError(err: unknown): DataError {
  if (isErrorBody(err)) return new DataError(err.kind, err.message);
  // Tauri itself rejects with a plain string (unknown command, denied by the capability).
  return new DataError('ipc', describe(err));
}

export function protocol(what: string): DataError {
  return new DataError('protocol', `The daemon sent a ${what} in an unknown shape.`);
}

export function expectArray<T>(value: unknown, what: string): T[] {
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

/** The network listener for askers on other machines (`GET /api/network`). */
export function expectNetwork(value: unknown): NetworkView {
  const text = (v: unknown) => v === null || v === undefined || typeof v === 'string';
  if (
    !isRecord(value) ||
    !['off', 'listening', 'failed'].includes(value.state as string) ||
    !['address', 'url', 'tls', 'certificateSha256', 'warning', 'error'].every((k) => text(value[k]))
  ) {
    throw protocol('network listener');
  }
  return value as unknown as NetworkView;
}

export function expectAgents(value: unknown): AgentView[] {
  return expectArray<unknown>(value, 'agent list').map(expectAgent);
}

export function expectAgentChange(value: unknown): AgentChange {
  if (!isRecord(value) || !Array.isArray(value.changes)) throw protocol('agent change');
  return { changes: value.changes.map(String), agent: expectAgent(value.agent) };
}

export function expectDesk(value: unknown): DeskView {
  if (!isRecord(value) || typeof value.name !== 'string' || !(value.deliverCommand === null || typeof value.deliverCommand === 'string')) {
    throw protocol('desk');
  }
  return value as unknown as DeskView;
}

/**
 * A session, its `permission` and `deliveryProblem` checked: absent (a daemon from before the
 * field) reads as null, anything but null or the documented shape is refused.
 */
export function expectSession(value: unknown): SessionView {
  if (!isRecord(value) || typeof value.id !== 'string' || typeof value.desk !== 'string') throw protocol('session');
  const asked = value.permission ?? null;
  if (asked !== null && !isPermissionRequest(asked)) throw protocol('session');
  const permission = asked === null ? null : { ...asked, description: asked.description ?? null };
  const problem = value.deliveryProblem ?? null;
  if (problem !== null && !isDeliveryProblem(problem)) throw protocol('session');
  return { ...value, permission, deliveryProblem: problem } as unknown as SessionView;
}

function isDeliveryProblem(value: unknown): boolean {
  return isRecord(value) && typeof value.method === 'string' && typeof value.why === 'string' && typeof value.at === 'string';
}

export function expectSessions(value: unknown): SessionView[] {
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
export function messageOf(message: string | undefined): string | null {
  const text = message?.trim() ?? '';
  return text === '' ? null : text;
}

export function expectTasks(value: unknown): TaskView[] {
  const tasks = expectArray<unknown>(value, 'task list');
  if (!tasks.every(isTaskView)) throw protocol('task list');
  return tasks as TaskView[];
}

export function expectDigest(value: unknown): DigestView {
  const lists = ['stalled', 'finished', 'waitingOnOwner', 'ackPending', 'reminders'];
  if (!isRecord(value) || !isRecord(value.counts) || !lists.every((k) => Array.isArray(value[k]))) {
    throw protocol('digest');
  }
  return value as unknown as DigestView;
}

export function expectTask(value: unknown): TaskView {
  if (!isTaskView(value)) throw protocol('task');
  return value;
}

export function expectDetail(value: unknown): TaskDetail {
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

/** The settings catalogue's rows, each with what the panel draws from it. */
export function expectCatalogue(value: unknown): SettingView[] {
  const rows = expectArray<unknown>(value, 'settings catalogue');
  const nullOrNumber = (v: unknown) => v === null || typeof v === 'number';
  for (const row of rows) {
    if (
      !isRecord(row) ||
      !['key', 'group', 'label', 'help', 'kind', 'default', 'expected'].every((k) => typeof row[k] === 'string') ||
      !nullOrNumber(row.min) ||
      !nullOrNumber(row.max) ||
      !Array.isArray(row.units) ||
      typeof row.shown !== 'boolean'
    ) {
      throw protocol('settings catalogue');
    }
  }
  return rows as SettingView[];
}

export function expectEnabled(value: unknown): boolean {
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
    typeof value.label === 'string' &&
    typeof value.version === 'number'
  );
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

function isErrorBody(value: unknown): value is OwnerError {
  return isRecord(value) && typeof value.kind === 'string' && typeof value.message === 'string';
}
