// Pure presentation logic over TaskView lists: grouping, ordering, counting and wording.
// Kept apart from the components so it is tested without a DOM.

import type { TaskView } from './types';

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

export function countTasks(tasks: readonly TaskView[]): Counts {
  return { open: tasks.length, stalled: tasks.filter((t) => t.stalledAt !== null).length };
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

/** The word the owner sees for a task's state; "queued" and "blocked" say more than A2A's names. */
export function stateLabel(task: TaskView): string {
  switch (task.state) {
    case 'submitted':
      return task.queuePosition !== null ? 'queued' : 'submitted';
    case 'working':
      return 'working';
    case 'input-required':
      return 'blocked';
    case 'completed':
      return 'done';
    case 'failed':
      return 'failed';
    case 'canceled':
      return task.expiredAt !== null ? 'expired' : 'canceled';
  }
}

export function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}
