// The ladder as a picture: pure geometry from a task's timeline (the daemon's, see
// `core::watchdog::timeline`), so the drawing is tested without a browser. Nothing here
// decides when a reminder is due: the daemon's timeline says, this only places it.

import type { Hold, TimelineView } from './types';

export type MarkKind = 'delivered' | 'quiet' | 'reminder' | 'next' | 'stall' | 'stalled' | 'ended' | 'now';

export interface Mark {
  kind: MarkKind;
  /** The time it stands for (ISO 8601). */
  at: string;
  x: number;
  /** 1-based reminder number, for reminders sent and due. */
  n?: number;
}

export interface TurnBox {
  x: number;
  width: number;
  origin: 'owner' | 'taskkeeper' | 'background';
  /** Still running at `now`. */
  running: boolean;
}

export interface Geometry {
  width: number;
  height: number;
  /** The axis's height. */
  axisY: number;
  /** Where the drawn time starts and ends. */
  x0: number;
  x1: number;
  /** Up to now: the solid line. */
  nowX: number;
  /** From the quiet start to now: the quiet stretch, if the ladder runs. */
  quiet: { x: number; width: number } | null;
  turns: TurnBox[];
  marks: Mark[];
}

export interface LayoutOptions {
  width: number;
  /** The reader's clock (ms): where "now" is drawn. */
  now: number;
  /** The open list's small version: lower, no room kept for numbers. */
  compact: boolean;
}

const PAD = 8;
/** A range this short (a task just handed over) is drawn as a minute. */
const MIN_SPAN_MS = 60_000;
/** The share of the line what already happened takes, while something is still to come. */
export const PAST_MIN = 0.35;
export const PAST_MAX = 0.65;

const ms = (iso: string | null | undefined): number | null => {
  if (!iso) return null;
  const t = Date.parse(iso);
  return Number.isNaN(t) ? null : t;
};

/** Place a timeline's events on a line `width` wide: from the delivery (or creation) to the
 *  last thing it shows (the stall to come, the stall, the end, or now). */
export function layout(t: TimelineView, { width, compact, now: clock }: LayoutOptions): Geometry {
  const height = compact ? 18 : 44;
  const axisY = compact ? 11 : 28;
  const start = ms(t.deliveredAt) ?? ms(t.createdAt) ?? 0;
  const now = Math.max(clock, start);
  const times = [
    now,
    ...t.reminders.map(ms),
    ...t.due.map((d) => ms(d.at)),
    ms(t.stalledAt),
    ms(t.endedAt),
    ...t.turns.map((x) => ms(x.endedAt)),
  ].filter((v): v is number => v !== null);
  const end = Math.max(start + MIN_SPAN_MS, ...times);
  const x0 = PAD;
  const x1 = Math.max(x0 + 1, width - PAD);
  // Two scales, each linear, meeting at now: what happened keeps between PAST_MIN and
  // PAST_MAX of the line however long the ladder still runs, so a few quick reminders are not
  // squeezed into a corner by a stall half an hour away (and the other way round).
  const split = now >= end ? 1 : Math.min(PAST_MAX, Math.max(PAST_MIN, (now - start) / (end - start)));
  const nowAt = x0 + split * (x1 - x0);
  const x = (at: number) => {
    const t = Math.min(Math.max(at, start), end);
    if (t <= now) return now === start ? x0 : x0 + ((t - start) / (now - start)) * (nowAt - x0);
    return nowAt + ((t - now) / (end - now)) * (x1 - nowAt);
  };
  const nowX = x(now);

  const marks: Mark[] = [];
  const add = (kind: MarkKind, iso: string | null, n?: number) => {
    const at = ms(iso);
    if (iso === null || at === null) return;
    marks.push(n === undefined ? { kind, at: iso, x: x(at) } : { kind, at: iso, x: x(at), n });
  };
  add('delivered', t.deliveredAt ?? t.createdAt);
  add('quiet', t.quietSince);
  t.reminders.forEach((r, i) => add('reminder', r, i + 1));
  t.due.forEach((d, i) => {
    if (d.kind === 'remind') add('next', d.at, t.reminders.length + i + 1);
    else add('stall', d.at);
  });
  add('stalled', t.stalledAt);
  add('ended', t.endedAt);
  add('now', new Date(now).toISOString());

  const turns: TurnBox[] = t.turns.flatMap((turn) => {
    const from = ms(turn.startedAt);
    if (from === null) return [];
    const to = ms(turn.endedAt) ?? now;
    const left = x(from);
    // A turn of a few seconds still shows: at least two pixels.
    return [{ x: left, width: Math.max(2, x(to) - left), origin: turn.origin, running: turn.endedAt === null }];
  });
  const quietAt = ms(t.quietSince);
  const quiet = quietAt === null ? null : { x: x(quietAt), width: Math.max(0, nowX - x(quietAt)) };
  return { width, height, axisY, x0, x1, nowX, quiet, turns, marks };
}

/** What the ladder waits on, in the owner's words. */
export function holdText(hold: Hold, until: string | null, time: (iso: string) => string): string {
  switch (hold) {
    case 'ended':
      return 'Ended: no more reminders.';
    case 'stalled':
      return 'Stalled: the ladder ran out. Resume the reminders or cancel the task.';
    case 'queued':
      return 'Queued: the ladder starts when the desk takes it.';
    case 'waits-on-asker':
      return 'Waits on its asker: no reminders until the asker answers.';
    case 'waits-on-owner':
      return 'Waits on you: no reminders while the session asks you something.';
    case 'not-delivered':
      return 'Not handed to a session yet: the ladder starts when one takes it.';
    case 'no-session':
      return 'No live session at its desk: nothing is reminded until one starts.';
    case 'paused':
      return 'Reminders are paused.';
    case 'busy':
      return 'The session is working: the ladder starts when it goes quiet.';
    case 'stopped-by-owner':
      return 'You interrupted the session: nothing happens until it is written to again.';
    case 'rate-limited':
      return until ? `Rate-limited until ${time(until)}: the ladder waits.` : 'Rate-limited: the ladder waits.';
    case 'wakes-itself':
      return until
        ? `The session scheduled a wake-up for ${time(until)}: the ladder waits until then.`
        : 'The session scheduled a wake-up: the ladder waits until then.';
  }
}

/** One line that says the picture: for a label and the open list's row. */
export function summary(t: TimelineView, time: (iso: string) => string): string {
  const sent = t.reminders.length;
  const parts: string[] = [];
  if (sent > 0) parts.push(`${sent} ${sent === 1 ? 'reminder' : 'reminders'} sent`);
  if (t.hold !== null) {
    parts.push(holdText(t.hold, t.holdUntil, time));
    return parts.join(' · ');
  }
  if (t.quietSince) parts.unshift(`Quiet since ${time(t.quietSince)}`);
  const next = t.due.find((d) => d.kind === 'remind');
  if (next) parts.push(`next reminder ${time(next.at)}`);
  const stall = t.due.find((d) => d.kind === 'stall');
  if (stall) parts.push(`stalls ${time(stall.at)} if it stays quiet`);
  return parts.join(' · ');
}
