// The owner API's wire types, as both transports deliver them (the `/api` JSON of
// crates/server and the `list_open_tasks` Tauri command return the same TaskView).

/** A2A task states, in the spelling the owner API uses. */
export type TaskState =
  | 'submitted'
  | 'working'
  | 'input-required'
  | 'completed'
  | 'failed'
  | 'canceled';

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
  statusText: string | null;
  version: number;
}

/** The error shape shared by `/api` (inside `{"error": ...}`) and Tauri commands. */
export interface ApiErrorBody {
  kind: string;
  message: string;
}
