// A task's ladder drawn as SVG: the geometry is `timeline.ts`'s (pure, unit-tested); the
// colours are the theme's (light and dark follow `prefers-color-scheme` through style.css).

import { layout, summary, holdText, type Mark } from './timeline';
import { formatTime } from './tasks';
import type { TimelineView } from './types';

const FULL_WIDTH = 400;
const COMPACT_WIDTH = 220;

const LABELS: Record<Mark['kind'], string> = {
  delivered: 'Handed to the session',
  quiet: 'Went quiet',
  reminder: 'Reminder',
  next: 'Reminder due',
  stall: 'Stalls if still quiet',
  stalled: 'Stalled',
  ended: 'Ended',
  now: 'Now',
};

function label(m: Mark): string {
  return m.n === undefined ? LABELS[m.kind] : `${LABELS[m.kind]} ${m.n}`;
}

function Shape({ m, axisY, compact }: { m: Mark; axisY: number; compact: boolean }) {
  const r = compact ? 3 : 4.5;
  const title = <title>{`${label(m)} · ${m.at}`}</title>;
  switch (m.kind) {
    case 'delivered':
      return (
        <circle class="tl-delivered" cx={m.x} cy={axisY} r={r - 1} data-mark={m.kind}>
          {title}
        </circle>
      );
    case 'quiet':
      return (
        <line class="tl-quiet-tick" x1={m.x} x2={m.x} y1={axisY - r - 2} y2={axisY + r + 2} data-mark={m.kind}>
          {title}
        </line>
      );
    case 'reminder':
    case 'next':
      return (
        <g data-mark={m.kind} data-n={m.n}>
          <circle class={m.kind === 'reminder' ? 'tl-reminder' : 'tl-next'} cx={m.x} cy={axisY} r={r}>
            {title}
          </circle>
          {!compact && (
            <text class="tl-num" x={m.x} y={axisY + r + 11} text-anchor="middle">
              {m.n}
            </text>
          )}
        </g>
      );
    case 'stall':
    case 'stalled': {
      const d = r + 1;
      return (
        <path
          class={m.kind === 'stall' ? 'tl-stall' : 'tl-stalled'}
          d={`M ${m.x} ${axisY - d} L ${m.x + d} ${axisY} L ${m.x} ${axisY + d} L ${m.x - d} ${axisY} Z`}
          data-mark={m.kind}
        >
          {title}
        </path>
      );
    }
    case 'ended':
      return (
        <rect class="tl-ended" x={m.x - r} y={axisY - r} width={2 * r} height={2 * r} data-mark={m.kind}>
          {title}
        </rect>
      );
    case 'now':
      return (
        <line class="tl-now" x1={m.x} x2={m.x} y1={2} y2={axisY + r + 3} data-mark={m.kind}>
          {title}
        </line>
      );
  }
}

/** The picture; `compact` is the open list's small version. */
export function Timeline({ timeline, now, compact = false }: { timeline: TimelineView; now: number; compact?: boolean }) {
  const time = (iso: string) => formatTime(iso, now);
  const g = layout(timeline, { width: compact ? COMPACT_WIDTH : FULL_WIDTH, compact, now });
  const text = summary(timeline, time);
  const future = timeline.due.length > 0;
  const bandH = compact ? 3 : 6;
  return (
    <svg
      class={compact ? 'timeline is-compact' : 'timeline'}
      viewBox={`0 0 ${g.width} ${g.height}`}
      role="img"
      aria-label={text}
      data-hold={timeline.hold ?? 'running'}
    >
      <line class="tl-axis" x1={g.x0} x2={g.nowX} y1={g.axisY} y2={g.axisY} />
      {future && <line class="tl-axis is-future" x1={g.nowX} x2={g.x1} y1={g.axisY} y2={g.axisY} />}
      {g.quiet && g.quiet.width > 0 && (
        <rect class="tl-quiet" x={g.quiet.x} y={g.axisY - 1.5} width={g.quiet.width} height={3} data-quiet />
      )}
      {g.turns.map((turn, i) => (
        <rect
          key={i}
          class={`tl-turn from-${turn.origin}${turn.running ? ' is-running' : ''}`}
          x={turn.x}
          y={g.axisY - bandH - (compact ? 4 : 8)}
          width={turn.width}
          height={bandH}
          rx={1}
          data-turn={turn.origin}
        >
          <title>{`Turn (${turn.origin === 'taskkeeper' ? 'started by a reminder' : `started by ${turn.origin === 'owner' ? 'you' : 'a background command'}`})`}</title>
        </rect>
      ))}
      {g.marks.map((m, i) => (
        <Shape key={i} m={m} axisY={g.axisY} compact={compact} />
      ))}
    </svg>
  );
}

/** The task detail's section: the picture, one line, and every step with its time. */
export function TimelineSection({ timeline, now }: { timeline: TimelineView; now: number }) {
  const time = (iso: string) => formatTime(iso, now);
  const g = layout(timeline, { width: FULL_WIDTH, compact: false, now });
  const steps = g.marks.filter((m) => m.kind !== 'now');
  return (
    <section class="ladder" aria-label="timeline">
      <h3>Timeline</h3>
      <Timeline timeline={timeline} now={now} />
      <p class="note tl-summary">
        {timeline.hold ? holdText(timeline.hold, timeline.holdUntil, time) : summary(timeline, time)}
      </p>
      <ol class="tl-steps">
        {steps.map((m, i) => (
          <li key={i} class={`tl-step is-${m.kind}`}>
            <span class={`tl-key is-${m.kind}`} aria-hidden="true" />
            <span class="tl-step-label">{label(m)}</span>
            <time dateTime={m.at} title={m.at}>
              {m.kind === 'next' || m.kind === 'stall' ? `${time(m.at)} (if still quiet)` : time(m.at)}
            </time>
          </li>
        ))}
        {timeline.turns.length > 0 && (
          <li class="tl-step is-turns">
            <span class="tl-key is-turn" aria-hidden="true" />
            <span class="tl-step-label">
              {timeline.turns.length === 1 ? '1 turn' : `${timeline.turns.length} turns`} of the session since it took
              the task
            </span>
          </li>
        )}
      </ol>
    </section>
  );
}
