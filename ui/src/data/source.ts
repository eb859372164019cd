// The data layer's contract: every owner operation the views use, exists once here
// (`DataSource`); each transport (tauri.ts, http.ts) implements all of them. Both front the
// same owner service in Rust, so they return the same shapes (the generated wire types, via
// types.ts) and the same `{kind, message}` errors (errors.ts).

import type { DataError } from './errors';
import type {
  AgentChange,
  AgentView,
  DeskView,
  DigestView,
  NetworkView,
  SessionView,
  SettingView,
  SettingsMap,
  TaskDetail,
  TaskView,
  WindowNotice,
} from '../types';

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
  /** Launch a headless session at a claude-code, codex or gemini desk; answers the new session. */
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
  /** What every setting is (the daemon's settings table): what the settings panel draws. */
  getSettingsCatalogue(): Promise<SettingView[]>;
  /** All changes are checked before any is written; returns every setting after the change. */
  saveSettings(changes: SettingsMap): Promise<SettingsMap>;
  pauseReminders(): Promise<SettingsMap>;
  resumeReminders(): Promise<SettingsMap>;
  /**
   * The listener for askers on other machines: whether it runs, the URL askers are given, the
   * certificate's fingerprint they pin, and what is wrong (`GET /api/network`).
   */
  getNetwork(): Promise<NetworkView>;
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
  /**
   * Tells the app the page's first frame is on screen (it logs how long the open took);
   * `pageMs` is the page's own clock then (milliseconds since its navigation started), or,
   * for a page loaded hidden, the milliseconds since it was shown, `hiddenMs` being its clock
   * when it was shown.
   */
  reportFirstFrame(pageMs: number, hiddenMs?: number): Promise<void>;
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
