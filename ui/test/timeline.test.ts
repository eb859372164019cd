import { describe, expect, it } from 'vitest';
import { holdText, layout, summary } from '../src/timeline';
import type { TimelineView } from '../src/types';

const M = (min: number) => Date.parse('2026-12-01T10:00:00.000Z') + min * 60_000;
/** The reader's clock in these tests: minute 7. */
const NOW = M(7);
const T = (min: number) => new Date(Date.parse('2026-12-01T10:00:00.000Z') + min * 60_000).toISOString();

/** The default Claude Code ladder two reminders in: handed over at 0, reminded at 5 and 6,
 *  the next at 8, 13, 23 and the stall at 53; the reader's clock says minute 7. */
function running(overrides: Partial<TimelineView> = {}): TimelineView {
  return {
    createdAt: T(0),
    deliveredAt: T(0),
    quietSince: T(6),
    reminders: [T(5), T(6)],
    due: [
      { at: T(8), kind: 'remind' },
      { at: T(13), kind: 'remind' },
      { at: T(23), kind: 'remind' },
      { at: T(53), kind: 'stall' },
    ],
    stalledAt: null,
    endedAt: null,
    expiresAt: T(24 * 60),
    turns: [
      { startedAt: T(0), endedAt: T(0), origin: 'owner' },
      { startedAt: T(5), endedAt: T(5.5), origin: 'taskkeeper' },
    ],
    hold: null,
    holdUntil: null,
    ...overrides,
  };
}

const time = (iso: string) => iso.slice(11, 16);

describe('the timeline geometry', () => {
  it('places every step in proportion: the past on its share of the line, the ladder to come on the rest', () => {
    // 7 minutes past of 53: under PAST_MIN, so the past takes 35 of the 100 px (5 px a
    // minute) and the 46 minutes to come the other 65.
    const g = layout(running(), { width: 116, compact: false, now: NOW });
    expect([g.x0, g.x1, g.nowX]).toEqual([8, 108, 43]);
    const future = (min: number) => 43 + ((min - 7) / 46) * 65;
    const got = g.marks.map((m) => [m.kind, m.n ?? null, m.x] as const);
    const want = [
      ['delivered', null, 8],
      ['quiet', null, 38],
      ['reminder', 1, 33],
      ['reminder', 2, 38],
      ['next', 3, future(8)],
      ['next', 4, future(13)],
      ['next', 5, future(23)],
      ['stall', null, 108],
      ['now', null, 43],
    ] as const;
    expect(got.map(([k, n]) => [k, n])).toEqual(want.map(([k, n]) => [k, n]));
    got.forEach(([, , x], i) => expect(x).toBeCloseTo(want[i]?.[2] ?? NaN));
    expect(g.quiet?.x).toBeCloseTo(38);
    expect(g.quiet?.width).toBeCloseTo(5);
    expect(g.turns.map((t) => [t.x, t.width, t.origin])).toEqual([
      [8, 2, 'owner'],
      [33, 2.5, 'taskkeeper'],
    ]);
  });

  it('gives the past its own share when it is long, and the whole line once nothing is to come', () => {
    // 50 minutes past, 3 to come: at most PAST_MAX of the line is the past.
    const late = layout(running({ due: [{ at: T(53), kind: 'stall' }] }), { width: 116, compact: false, now: M(50) });
    expect(late.nowX).toBeCloseTo(8 + 0.65 * 100);
    const done = layout(running({ due: [], hold: 'busy', quietSince: null }), { width: 116, compact: false, now: M(20) });
    expect(done.nowX).toBe(108);
  });

  it('keeps the small version lower and the same order', () => {
    const full = layout(running(), { width: 240, compact: false, now: NOW });
    const small = layout(running(), { width: 240, compact: true, now: NOW });
    expect(small.height).toBeLessThan(full.height);
    expect(small.marks.map((m) => m.kind)).toEqual(full.marks.map((m) => m.kind));
    for (const m of small.marks) {
      expect(m.x).toBeGreaterThanOrEqual(small.x0);
      expect(m.x).toBeLessThanOrEqual(small.x1);
    }
  });

  it('ends at the stall or the end when nothing is due, and draws a minute for a fresh task', () => {
    const stalled = layout(
      running({ due: [], quietSince: null, stalledAt: T(53), hold: 'stalled' }),
      { width: 128, compact: false, now: M(60) },
    );
    // Nothing to come: one linear scale to now.
    // 60 minutes over 112 px; the stall mark at 53 minutes.
    expect(stalled.marks.find((m) => m.kind === 'stalled')?.x).toBeCloseTo(8 + (53 / 60) * 112);
    expect(stalled.quiet).toBeNull();
    const fresh = layout(running({ reminders: [], due: [], turns: [], quietSince: T(0) }), {
      width: 128,
      compact: true,
      now: M(0),
    });
    expect(fresh.marks.map((m) => m.x)).toEqual([8, 8, 8]);
    expect(fresh.x1).toBe(120);
  });

  it('draws a running turn up to now', () => {
    const g = layout(running({ turns: [{ startedAt: T(6), endedAt: null, origin: 'taskkeeper' }], hold: 'busy', due: [] }), {
      width: 122,
      compact: false,
      now: NOW,
    });
    // Without the due steps the line ends at now (minute 7): 106 px for 7 minutes.
    const turn = g.turns[0];
    expect([turn?.origin, turn?.running]).toEqual(['taskkeeper', true]);
    expect(turn?.x).toBeCloseTo(8 + (6 / 7) * 106);
    expect(turn?.width).toBeCloseTo((1 / 7) * 106);
  });
});

describe('the timeline in words', () => {
  it('says when it went quiet, what was sent and what comes', () => {
    expect(summary(running(), time)).toBe(
      'Quiet since 10:06 · 2 reminders sent · next reminder 10:08 · stalls 10:53 if it stays quiet',
    );
  });

  it('says why the ladder waits', () => {
    expect(summary(running({ hold: 'busy', due: [], reminders: [] }), time)).toBe(
      'The session is working: the ladder starts when it goes quiet.',
    );
    expect(holdText('rate-limited', T(30), time)).toBe('Rate-limited until 10:30: the ladder waits.');
    expect(holdText('wakes-itself', T(30), time)).toBe(
      'The session scheduled a wake-up for 10:30: the ladder waits until then.',
    );
    expect(holdText('no-session', null, time)).toContain('No live session');
  });
});
