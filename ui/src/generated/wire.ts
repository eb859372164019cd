// Generated from the daemon's Rust wire types (crates/server/src/owner/ui_types.rs, with ts-rs).
// Do not edit: change the Rust type, then run `make ui-types`. A server test fails while this
// file differs from what the Rust types generate.

/**
 * A wall-clock instant in whole milliseconds since the Unix epoch (UTC).
 *
 * On the wire it is ISO 8601 with milliseconds and a `Z` suffix, as A2A asks (spec §5.6.1;
 * docs/a2a.md §5).
 */
export type Timestamp = string;

/**
 * A task's A2A state, in the owner API's spelling (`core::TaskState::as_str`).
 */
export type TaskState = "submitted" | "working" | "input-required" | "auth-required" | "completed" | "failed" | "canceled" | "rejected";

/**
 * Which label a task is shown with (`core::task::Label::kind`), for styling; the task view's
 * `label` carries the words.
 */
export type LabelKind = "queued" | "working" | "stalled" | "waiting-on-owner" | "blocked" | "auth-required" | "completed" | "failed" | "expired" | "canceled" | "rejected";

/**
 * A task as the owner's list shows it.
 */
export type TaskView = { id: string, contextId: string, desk: string, asker: string, state: TaskState, 
/**
 * The words every surface shows for the task's state (`core::Task::label`): `queued #2`,
 * `working`, `stalled`, `waiting on you`, `blocked`, `completed`, `expired`...
 */
label: string, 
/**
 * Which label that is, for styling.
 */
labelKind: LabelKind, 
/**
 * The asker's request.
 */
request: string, createdAt: Timestamp, updatedAt: Timestamp, queuePosition: number | null, remindersSent: number, lastReminderAt: Timestamp | null, stalledAt: Timestamp | null, expiredAt: Timestamp | null, acknowledgedAt: Timestamp | null, lastWords: string | null, 
/**
 * A permission prompt of the desk's session waits on the owner.
 */
waitingOnOwner: boolean, 
/**
 * When the desk's session was handed the task (`None` while it waits to be delivered).
 */
deliveredAt: Timestamp | null, 
/**
 * The text of the latest status: the summary, what is needed, why it failed.
 */
statusText: string | null, version: number, 
/**
 * The ladder as the owner's views draw it (`core::watchdog::timeline`); filled in by
 * the owner service's task lists and details, absent elsewhere (notices).
 */
timeline?: TimelineView, };

export type TaskList = { tasks: Array<TaskView>, };

/**
 * A task with its history and artifacts.
 */
export type TaskDetail = { history: Array<MessageView>, artifacts: Array<ArtifactView>, id: string, contextId: string, desk: string, asker: string, state: TaskState, 
/**
 * The words every surface shows for the task's state (`core::Task::label`): `queued #2`,
 * `working`, `stalled`, `waiting on you`, `blocked`, `completed`, `expired`...
 */
label: string, 
/**
 * Which label that is, for styling.
 */
labelKind: LabelKind, 
/**
 * The asker's request.
 */
request: string, createdAt: Timestamp, updatedAt: Timestamp, queuePosition: number | null, remindersSent: number, lastReminderAt: Timestamp | null, stalledAt: Timestamp | null, expiredAt: Timestamp | null, acknowledgedAt: Timestamp | null, lastWords: string | null, 
/**
 * A permission prompt of the desk's session waits on the owner.
 */
waitingOnOwner: boolean, 
/**
 * When the desk's session was handed the task (`None` while it waits to be delivered).
 */
deliveredAt: Timestamp | null, 
/**
 * The text of the latest status: the summary, what is needed, why it failed.
 */
statusText: string | null, version: number, 
/**
 * The ladder as the owner's views draw it (`core::watchdog::timeline`); filled in by
 * the owner service's task lists and details, absent elsewhere (notices).
 */
timeline?: TimelineView, };

/**
 * Who wrote a message of a task's history.
 */
export type MessageFrom = "asker" | "worker";

/**
 * One message of a task's history.
 */
export type MessageView = { messageId: string, from: MessageFrom, text: string, };

export type ArtifactView = { artifactId: string, name: string | null, text: string, };

export type CancelRequest = { reason?: string, };

/**
 * A task's ladder: what happened and what comes next if its session stays quiet.
 */
export type TimelineView = { createdAt: Timestamp, deliveredAt: Timestamp | null, 
/**
 * When the holding session went quiet, while the ladder runs.
 */
quietSince: Timestamp | null, 
/**
 * The current ladder's reminders, oldest first.
 */
reminders: Array<Timestamp>, 
/**
 * The steps to come: reminders, then the stall.
 */
due: Array<StepView>, stalledAt: Timestamp | null, endedAt: Timestamp | null, expiresAt: Timestamp | null, 
/**
 * The holding session's turns since it was handed the task.
 */
turns: Array<TurnView>, 
/**
 * Why nothing is due; `null` while the ladder runs.
 */
hold: Hold | null, 
/**
 * With `rate-limited`: until when.
 */
holdUntil: Timestamp | null, };

/**
 * Why a task's ladder waits (`core::watchdog::Hold`, its `rate-limited` and `wakes-itself`
 * until in [`super::TimelineView::hold_until`]).
 */
export type Hold = "ended" | "stalled" | "queued" | "waits-on-asker" | "waits-on-owner" | "not-delivered" | "no-session" | "paused" | "busy" | "stopped-by-owner" | "rate-limited" | "wakes-itself";

export type StepView = { at: Timestamp, kind: StepKind, };

/**
 * What a step of the ladder does.
 */
export type StepKind = "remind" | "stall";

export type TurnView = { startedAt: Timestamp, endedAt: Timestamp | null, 
/**
 * Who started it.
 */
origin: TurnOrigin, };

/**
 * Who started a turn (`core::session::TurnOrigin`).
 */
export type TurnOrigin = "owner" | "taskkeeper" | "background";

/**
 * `GET /api/digest`: what happened since the owner last took a digest.
 */
export type DigestView = { 
/**
 * The last digest taken; `null`: never.
 */
since: Timestamp | null, until: Timestamp, counts: DigestCounts, stalled: Array<TaskView>, finished: Array<TaskView>, waitingOnOwner: Array<TaskView>, ackPending: Array<TaskView>, reminders: Array<ReminderView>, };

export type DigestCounts = { stalled: number, finished: number, waitingOnOwner: number, ackPending: number, reminders: number, };

/**
 * One reminder sent: to which task's session, when.
 */
export type ReminderView = { task: string, desk: string, request: string, at: Timestamp, };

/**
 * `GET /api/settings/catalogue`: every setting, in the order the panel shows them.
 */
export type SettingsCatalogue = { settings: Array<SettingView>, };

/**
 * One setting, as the settings panel shows it.
 */
export type SettingView = { key: string, 
/**
 * The heading it shows under.
 */
group: string, label: string, 
/**
 * What it does, in a sentence.
 */
help: string, kind: SettingKind, 
/**
 * The smallest value a count or a size takes (a size in bytes); `null` for other kinds.
 */
min: number | null, 
/**
 * The largest, likewise.
 */
max: number | null, 
/**
 * The units a value is written in (`s`, `m`, `h`, `d`; `B`, `KiB`, `MiB`), if any.
 */
units: Array<string>, 
/**
 * Its value until the owner changes it.
 */
default: string, 
/**
 * What it accepts, in the words the daemon's refusal uses.
 */
expected: string, 
/**
 * Listed by the panel and `taskkeeper settings list`.
 */
shown: boolean, };

/**
 * What a setting's value is (`core::settings::Kind`); a count's and a size's range are
 * [`SettingView::min`] and [`SettingView::max`].
 */
export type SettingKind = "duration" | "ladder" | "count" | "bytes" | "bool" | "shortcut" | "time-of-day" | "text";

export type DeskView = { name: string, agent: string, dir: string, 
/**
 * The command that delivers text to the desk's agent, if it has one.
 */
deliverCommand: string | null, 
/**
 * The desk launches a headless session by itself when it has work and no live session.
 */
autoLaunch: boolean, 
/**
 * Its open tasks (queued, working, waiting on the asker).
 */
openTasks: number, 
/**
 * A session of the desk is live.
 */
liveSession: boolean, 
/**
 * It has work a session would take (a queued task, a working one not stalled) and no
 * live session: nothing moves until one is launched or started.
 */
needsSession: boolean, 
/**
 * With `autoLaunch`: the guard holds the next launch until then (launches that did not
 * move the work).
 */
autoLaunchRetryAt: Timestamp | null, 
/**
 * With `autoLaunch`: the desk gave up launching by itself after too many launches that
 * did not move the work; the owner's launch (or turning the setting off and on) resets
 * it.
 */
autoLaunchGaveUp: boolean, createdAt: Timestamp, };

export type DeskList = { desks: Array<DeskView>, };

/**
 * `PATCH /api/desks/{name}`: the fields to change.
 */
export type DeskChange = { 
/**
 * A command, or null to remove it; absent: unchanged.
 */
deliverCommand?: string | null, 
/**
 * Launch a session by itself when the desk has work and none is live; absent:
 * unchanged.
 */
autoLaunch?: boolean, };

/**
 * What a session is doing (`core::Activity`).
 */
export type Activity = "busy" | "idle" | "waiting-on-owner" | "stopped-by-owner" | "ended";

/**
 * A session as the owner sees it.
 */
export type SessionView = { id: string, desk: string, agent: string, activity: Activity, since: Timestamp, background: Array<string>, rateLimitedUntil: Timestamp | null, 
/**
 * The earliest wake-up the session scheduled for itself (it is not reminded before).
 */
wakesAt: Timestamp | null, lastWords: string | null, tmuxPane: string | null, pid: number | null, 
/**
 * Taskkeeper launched it headless and speaks to it on its stdin (the owner can stop it).
 */
headless: boolean, 
/**
 * What a headless session asks the owner to allow (it waits until answered).
 */
permission: PermissionView | null, 
/**
 * Why the latest push to it did not deliver (nothing was delivered since).
 */
deliveryProblem: DeliveryProblemView | null, 
/**
 * The owner paused this session's reminders.
 */
remindersPaused: boolean, updatedAt: Timestamp, };

export type SessionList = { sessions: Array<SessionView>, };

/**
 * A tool a launched session asks to use.
 */
export type PermissionView = { requestId: string, tool: string, description: string | null, 
/**
 * The tool's input as JSON text, cut to 2000 characters.
 */
input: string, };

/**
 * `POST /api/sessions/{id}/permission`.
 */
export type PermissionAnswer = { allow: boolean, 
/**
 * With a denial: what the model reads.
 */
message?: string, 
/**
 * The request being answered, as the owner saw it: if the session now asks something
 * else, the answer is refused instead of landing on a request the owner never saw.
 */
requestId?: string, };

/**
 * Why a push to a session did not deliver: the way in tried (`tmux paste`, `command`, …),
 * why, and when.
 */
export type DeliveryProblemView = { method: string, why: string, at: Timestamp, };

/**
 * An agent Taskkeeper can connect (`GET /api/agents`), as the settings panel lists it.
 */
export type AgentView = { 
/**
 * `claude-code`: what the routes and `taskkeeper connect` name it.
 */
agent: string, 
/**
 * `Claude Code`: what people call it.
 */
name: string, 
/**
 * It is on this machine (its command on the PATH, or its settings in the home).
 */
found: boolean, 
/**
 * Taskkeeper's hooks or MCP server are in its settings.
 */
connected: boolean, 
/**
 * Connected, and everything the settings name runs and reaches this daemon.
 */
working: boolean, 
/**
 * What is fine, a line each (`` `taskkeeper` runs (taskkeeper 0.1.0) ``).
 */
ok: Array<string>, 
/**
 * What is wrong, a line each, each saying what to do.
 */
problems: Array<string>, 
/**
 * Disconnect has something to restore (a backup of the files as they were).
 */
canUndo: boolean, 
/**
 * The files Connect changes.
 */
files: Array<string>, };

export type AgentList = { agents: Array<AgentView>, };

/**
 * What Connect or Disconnect did: a line per file, and the agent afterwards.
 */
export type AgentChange = { changes: Array<string>, agent: AgentView, };

/**
 * `POST /api/agents/{agent}/connect`.
 */
export type ConnectRequest = { 
/**
 * Name a `taskkeeper` that lives in a Cargo build directory anyway.
 */
force: boolean, };

/**
 * Whether the network listener runs.
 */
export type NetworkStateView = "off" | "listening" | "failed";

/**
 * The network listener now.
 */
export type NetworkView = { state: NetworkStateView, 
/**
 * The address and port it listens on.
 */
address: string | null, 
/**
 * The URL askers are given (the cards name it): add `/a2a/<desk>` for a desk.
 */
url: string | null, 
/**
 * `self-signed`, `files`, `proxy` or `off`.
 */
tls: string | null, 
/**
 * The SHA-256 fingerprint of its certificate (`AB:CD:…`), for askers to pin.
 */
certificateSha256: string | null, 
/**
 * What the owner is warned of while it runs (plain HTTP beyond loopback).
 */
warning: string | null, 
/**
 * Why it does not run.
 */
error: string | null, };

/**
 * Something the owner should hear about.
 */
export type Notice = { "kind": "stalled", task: TaskView, } | { "kind": "session-ended", session: string, desk: string, openTasks: number, } | { "kind": "permission-asked", session: string, desk: string, tool: string, description: string | null, 
/**
 * The session's id for the request, so an answer from a notification answers this
 * one and no later request.
 */
requestId?: string, } | { "kind": "digest", counts: DigestCounts, } | { "kind": "blocked", task: TaskView, } | { "kind": "finished", task: TaskView, };

/**
 * What kind of error, for programs: the UI and the CLI branch on this, never on the text.
 */
export type OwnerErrorKind = "not_found" | "invalid" | "conflict" | "unauthorized" | "forbidden" | "too_large" | "limit" | "internal";

/**
 * An error as the owner's tools see it: `{kind, message}`.
 */
export type OwnerError = { kind: OwnerErrorKind, message: string, };

/**
 * Every error body: `{"error": {"kind": ..., "message": ...}}`.
 */
export type ErrorBody = { error: OwnerError, };

/**
 * `POST /api/ui/codes`: what to mint. `page`: write the code into a sign-in page for the
 * browser to open (`taskkeeper open`), so no command line holds it.
 */
export type UiCodeRequest = { page: boolean, };

/**
 * `POST /api/ui/codes`: a sign-in code for the web UI (see `ui_codes.rs`), shown once, and
 * the sign-in page that carries it when one was asked for.
 */
export type UiCodeView = { code: string, expiresAt: Timestamp, page?: string, };

/**
 * `POST /ui/session`: the code from the page's address.
 */
export type UiSessionRequest = { code: string, };

/**
 * The answer to a good code: the owner token, for the tab's session storage.
 */
export type UiSessionView = { token: string, };
