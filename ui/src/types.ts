// The owner API's wire types, as both transports deliver them: the `/api` JSON of
// crates/server (`api.rs`) and the tray app's Tauri commands return the same shapes, because
// both wrap the one owner service.

/** A2A task states, in the spelling the owner API uses. */
export type TaskState =
  | 'submitted'
  | 'working'
  | 'input-required'
  | 'completed'
  | 'failed'
  | 'canceled'
  | 'rejected';

/** One task as the owner sees it. Times are ISO 8601 strings in UTC with milliseconds. */
export interface TaskView {
  id: string;
  contextId: string;
  desk: string;
  asker: string;
  state: TaskState;
  /** The full request text; the list shows its first line. */
  request: string;
  createdAt: string;
  updatedAt: string;
  /** 1-based place in the desk's queue while the task waits, otherwise null. */
  queuePosition: number | null;
  remindersSent: number;
  lastReminderAt: string | null;
  stalledAt: string | null;
  expiredAt: string | null;
  acknowledgedAt: string | null;
  /** What the worker last said, so the owner sees where it stopped. */
  lastWords: string | null;
  /** A permission prompt of the desk's session waits on the owner. */
  waitingOnOwner: boolean;
  /** When the desk's session was handed the task; null while it waits to be delivered. */
  deliveredAt: string | null;
  /** The latest status's text: the summary, what is needed, why it failed. */
  statusText: string | null;
  /** Grows with every change; an event older than what is shown is ignored. */
  version: number;
  /**
   * The ladder as the daemon will run it (`core::watchdog::timeline`): present in the owner
   * API's lists and details, absent in live changes and notices (the re-read brings it).
   */
  timeline?: TimelineView;
}

/** Why a task's ladder waits; null while it runs. */
export type Hold =
  | 'ended'
  | 'stalled'
  | 'queued'
  | 'waits-on-asker'
  | 'waits-on-owner'
  | 'not-delivered'
  | 'no-session'
  | 'paused'
  | 'busy'
  | 'stopped-by-owner'
  | 'rate-limited';

/** A task's ladder: what happened, and what comes if its session stays quiet. */
export interface TimelineView {
  createdAt: string;
  deliveredAt: string | null;
  /** When the holding session went quiet, while the ladder runs. */
  quietSince: string | null;
  /** The current ladder's reminders, oldest first. */
  reminders: string[];
  /** The steps to come: reminders, then the stall. */
  due: { at: string; kind: 'remind' | 'stall' }[];
  stalledAt: string | null;
  endedAt: string | null;
  expiresAt: string | null;
  /** The holding session's turns since it took the task. */
  turns: { startedAt: string; endedAt: string | null; origin: 'owner' | 'taskkeeper' | 'background' }[];
  hold: Hold | null;
  holdUntil: string | null;
}

/** What the digest counts. */
export interface DigestCounts {
  stalled: number;
  finished: number;
  waitingOnOwner: number;
  ackPending: number;
  reminders: number;
}

/** `GET /api/digest`: what happened since the owner last took a digest. */
export interface DigestView {
  /** The last digest taken; null: never. */
  since: string | null;
  until: string;
  counts: DigestCounts;
  stalled: TaskView[];
  finished: TaskView[];
  waitingOnOwner: TaskView[];
  ackPending: TaskView[];
  reminders: { task: string; desk: string; request: string; at: string }[];
}

/** One message of a task's history. */
export interface MessageView {
  messageId: string;
  from: 'asker' | 'worker';
  text: string;
}

export interface ArtifactView {
  artifactId: string;
  name: string | null;
  text: string;
}

/** A task with its history and artifacts (`GET /api/tasks/{id}`, `get_task`). */
export interface TaskDetail extends TaskView {
  history: MessageView[];
  artifacts: ArtifactView[];
}

export interface DeskView {
  name: string;
  /** `claude-code`, `codex`, `gemini` or `generic`. */
  agent: string;
  dir: string;
  /**
   * The shell command the daemon runs with the text on its stdin to reach the desk's agent
   * when no better way in exists (agents without hooks); null when the desk has none.
   */
  deliverCommand: string | null;
  /** The desk launches a headless session by itself when it has work and no live session. */
  autoLaunch?: boolean;
  /** Its open tasks. */
  openTasks?: number;
  /** A session of the desk is live. */
  liveSession?: boolean;
  /** Work waits (a queued task, a working one not stalled) and no session is live. */
  needsSession?: boolean;
  /** With autoLaunch: the guard holds the next launch until then. */
  autoLaunchRetryAt?: string | null;
  /** With autoLaunch: it gave up after launches that did not move the work. */
  autoLaunchGaveUp?: boolean;
  createdAt: string;
}

/** An agent Taskkeeper can connect (`GET /api/agents`, `list_agents`). */
export interface AgentView {
  /** `claude-code`: what `taskkeeper connect` and the routes call it. */
  agent: string;
  /** `Claude Code`. */
  name: string;
  /** On this machine: its command on the PATH, or its settings in the home. */
  found: boolean;
  /** Taskkeeper's hooks or MCP server are in its settings. */
  connected: boolean;
  /** Connected, and what the settings name runs and reaches this daemon. */
  working: boolean;
  ok: string[];
  /** What is wrong, each saying what to do. */
  problems: string[];
  /** Disconnect restores a backup of the files as they were. */
  canUndo: boolean;
  /** The files Connect changes. */
  files: string[];
}

/** What Connect or Disconnect changed, a line per file, and the agent afterwards. */
export interface AgentChange {
  changes: string[];
  agent: AgentView;
}

export type Activity = 'busy' | 'idle' | 'waiting-on-owner' | 'stopped-by-owner' | 'ended';

/** An agent session at a desk, as its hooks and level signals describe it. */
export interface SessionView {
  id: string;
  desk: string;
  agent: string;
  activity: Activity;
  since: string;
  /** Background commands the session started and has not seen end. */
  background: string[];
  rateLimitedUntil: string | null;
  lastWords: string | null;
  tmuxPane: string | null;
  pid: number | null;
  /** Taskkeeper launched it headless (`claude -p`) and speaks to it on its stdin; the owner can stop it. */
  headless: boolean;
  updatedAt: string;
  /**
   * Whether the owner paused this session's reminders. Not every daemon reports it; when it is
   * absent the UI offers both pause and resume rather than guess.
   */
  remindersPaused?: boolean;
  /**
   * What a headless session waits for the owner to allow or deny (its activity is then
   * `waiting-on-owner`); null when nothing waits, and from a daemon that predates the field.
   */
  permission: PermissionRequest | null;
}

/** A tool a headless session wants to use that the project's settings don't allow. */
export interface PermissionRequest {
  requestId: string;
  /** The tool's name: `Bash`, `Write`, `mcp__server__tool`… */
  tool: string;
  /** What Claude Code says the call does, when it says. */
  description: string | null;
  /** The tool's input as JSON text, at most 2000 characters (longer ones end in an ellipsis). */
  input: string;
}

/** Every setting as text, keyed by name (`reminders.ladder` → `1m,2m,5m,10m`). */
export type SettingsMap = Record<string, string>;

/** What the daemon tells the owner besides task changes (`event: notice`, `taskkeeper://notice`). */
export type Notice =
  | { kind: 'stalled'; task: TaskView }
  | { kind: 'session-ended'; session: string; desk: string; openTasks: number }
  /**
   * A headless session Taskkeeper launched waits until the owner allows or denies a tool (in the
   * Desks view, or `taskkeeper session allow|deny`). `description` is what Claude Code says the
   * call does, when it says.
   */
  | { kind: 'permission-asked'; session: string; desk: string; tool: string; description: string | null }
  /** The digest is offered (at login or its time of day): its counts; the Digest view shows it. */
  | { kind: 'digest'; counts: DigestCounts };

/** The error shape shared by `/api` (inside `{"error": ...}`) and Tauri commands. */
export interface ApiErrorBody {
  kind: string;
  message: string;
}

/**
 * `POST /ui/session`'s answer to a good sign-in code (`UiSessionView` in api.rs): the owner
 * token, for the tab's session storage. The code comes from `taskkeeper open`'s address.
 */
export interface UiSession {
  token: string;
}
