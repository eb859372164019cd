// Pure presentation logic over TaskView lists: grouping, ordering, counting and wording.
// Kept apart from the components so it is tested without a DOM.

import type { TaskState, TaskView } from './types';

export interface DeskGroup {
  desk: string;
  tasks: TaskView[];
}

/**
 * Groups tasks by desk, desks alphabetically. Within a desk the task being worked on comes
 * first, then the queue in its order, so the list reads the way the desk will work through it.
 */
export function groupByDesk(tasks: readonly TaskView[]): DeskGroup[] {
  const byDesk = new Map<string, TaskView[]>();
  for (const task of tasks) {
    const list = byDesk.get(task.desk);
    if (list) list.push(task);
    else byDesk.set(task.desk, [task]);
  }
  return [...byDesk.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([desk, list]) => ({ desk, tasks: list.sort(compareInDesk) }));
}

function compareInDesk(a: TaskView, b: TaskView): number {
  // Not queued (null) sorts before any queue position.
  const qa = a.queuePosition ?? 0;
  const qb = b.queuePosition ?? 0;
  if (qa !== qb) return qa - qb;
  return a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id);
}

export interface Counts {
  open: number;
  stalled: number;
}

/** The open tasks, and how many of them are labelled stalled (the daemon's `Task::label`). */
export function countTasks(tasks: readonly TaskView[]): Counts {
  return { open: tasks.length, stalled: tasks.filter((t) => t.labelKind === 'stalled').length };
}

/** The first non-empty line of the request, which is what askers put their point in. */
export function firstLine(text: string): string {
  for (const line of text.split(/\r?\n/)) {
    const trimmed = line.trim();
    if (trimmed !== '') return trimmed;
  }
  return '';
}

/** A short age such as "just now", "12 min", "3 h 5 min" or "2 d 4 h". */
export function formatAge(since: string, now: number): string {
  const then = Date.parse(since);
  if (Number.isNaN(then)) return '';
  const minutes = Math.floor(Math.max(0, now - then) / 60_000);
  if (minutes < 1) return 'just now';
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) {
    const rest = minutes % 60;
    return rest === 0 ? `${hours} h` : `${hours} h ${rest} min`;
  }
  const days = Math.floor(hours / 24);
  const rest = hours % 24;
  return rest === 0 ? `${days} d` : `${days} d ${rest} h`;
}

/** "just now" or "12 min ago". */
export function formatAgo(since: string, now: number): string {
  const age = formatAge(since, now);
  return age === 'just now' || age === '' ? age : `${age} ago`;
}

/**
 * Open tasks are those a desk still owes an answer; the rest ended and are kept for a while.
 * The daemon's rule (`core::Task::is_open`): every state that is not an ending.
 */
export function isOpen(task: TaskView): boolean {
  return !ENDED.has(task.state);
}

const ENDED: ReadonlySet<TaskState> = new Set<TaskState>(['completed', 'failed', 'canceled', 'rejected']);

/**
 * Applies one change from the live feed to a shown list: replaces the task (or adds it) when
 * it still belongs there, removes it when it no longer does (an open task that ended), and
 * ignores a change older than the one shown (events and re-reads can cross).
 */
export function mergeTask(list: readonly TaskView[], task: TaskView, belongs: (t: TaskView) => boolean): TaskView[] {
  const at = list.findIndex((t) => t.id === task.id);
  const shown = at === -1 ? undefined : list[at];
  if (shown && shown.version > task.version) return list as TaskView[];
  if (!belongs(task)) return at === -1 ? (list as TaskView[]) : list.filter((t) => t.id !== task.id);
  if (at === -1) return [...list, task];
  // A live change carries no timeline; the shown one stays until the re-read brings the new.
  const merged = task.timeline === undefined && shown?.timeline ? { ...task, timeline: shown.timeline } : task;
  return list.map((t, i) => (i === at ? merged : t));
}

/** Recent tasks, the last to end first. */
export function sortRecent(tasks: readonly TaskView[]): TaskView[] {
  return [...tasks].sort((a, b) => b.updatedAt.localeCompare(a.updatedAt) || a.id.localeCompare(b.id));
}

export interface DayGroup {
  /** "Today", "Yesterday" or a date such as "Mon 28 Nov". */
  label: string;
  tasks: TaskView[];
}

/** Groups tasks (already sorted) by the local day they ended. */
export function groupByDay(tasks: readonly TaskView[], now: number): DayGroup[] {
  const today = startOfDay(now);
  const groups: DayGroup[] = [];
  for (const task of tasks) {
    const at = Date.parse(task.updatedAt);
    const days = Number.isNaN(at) ? 0 : Math.round((today - startOfDay(at)) / 86_400_000);
    const label =
      days <= 0
        ? 'Today'
        : days === 1
          ? 'Yesterday'
          : new Date(at).toLocaleDateString(undefined, { weekday: 'short', day: 'numeric', month: 'short' });
    const last = groups[groups.length - 1];
    if (last && last.label === label) last.tasks.push(task);
    else groups.push({ label, tasks: [task] });
  }
  return groups;
}

function startOfDay(ms: number): number {
  const d = new Date(ms);
  d.setHours(0, 0, 0, 0);
  return d.getTime();
}

/** A clock time for times of today, with the date otherwise: "14:05" or "28 Nov, 14:05". */
export function formatTime(iso: string, now: number): string {
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return '';
  const d = new Date(at);
  const time = d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  if (startOfDay(at) === startOfDay(now)) return time;
  return `${d.toLocaleDateString(undefined, { day: 'numeric', month: 'short' })}, ${time}`;
}

export function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}
