import { describe, expect, it } from 'vitest';
import { countTasks, firstLine, formatAge, formatAgo, groupByDay, groupByDesk, isOpen, mergeTask, sortRecent } from '../src/tasks';
import { task } from './fixtures';

describe('groupByDesk', () => {
  it('sorts desks by name and puts the running task before the queue, in queue order', () => {
    const groups = groupByDesk([
      task({ id: 'q2', desk: 'web', state: 'submitted', queuePosition: 2, createdAt: '2026-11-30T09:00:00.000Z' }),
      task({ id: 'api', desk: 'api' }),
      task({ id: 'q1', desk: 'web', state: 'submitted', queuePosition: 1, createdAt: '2026-11-30T11:00:00.000Z' }),
      task({ id: 'run', desk: 'web', state: 'working', createdAt: '2026-11-30T12:00:00.000Z' }),
    ]);
    expect(groups.map((g) => [g.desk, g.tasks.map((t) => t.id)])).toEqual([
      ['api', ['api']],
      ['web', ['run', 'q1', 'q2']],
    ]);
  });

  it('gives no groups for no tasks', () => {
    expect(groupByDesk([])).toEqual([]);
  });
});

describe('wording', () => {
  it('counts the tasks the daemon labels stalled', () => {
    const stalled = task({ id: 'b', stalledAt: '2026-11-30T10:30:00.000Z', label: 'stalled', labelKind: 'stalled' });
    expect(countTasks([task(), stalled])).toEqual({
      open: 2,
      stalled: 1,
    });
  });

  it('shows the first non-empty line of a request', () => {
    expect(firstLine('\n  Add a --json flag  \r\nmore')).toBe('Add a --json flag');
    expect(firstLine('   ')).toBe('');
  });

  it('formats ages', () => {
    const now = Date.parse('2026-11-30T12:00:00.000Z');
    expect(formatAge('2026-11-30T11:59:30.000Z', now)).toBe('just now');
    expect(formatAge('2026-11-30T11:48:00.000Z', now)).toBe('12 min');
    expect(formatAge('2026-11-30T09:00:00.000Z', now)).toBe('3 h');
    expect(formatAge('2026-11-30T08:55:00.000Z', now)).toBe('3 h 5 min');
    expect(formatAge('2026-11-28T08:00:00.000Z', now)).toBe('2 d 4 h');
    expect(formatAge('not a date', now)).toBe('');
    expect(formatAgo('2026-11-30T11:48:00.000Z', now)).toBe('12 min ago');
    expect(formatAgo('2026-11-30T12:00:00.000Z', now)).toBe('just now');
  });
});

describe('live changes', () => {
  const open = (t: { state: string }) => ['submitted', 'working', 'input-required'].includes(t.state);

  it("keeps the shown timeline when a live change carries none, until the re-read brings the new", () => {
    const timeline = {
      createdAt: '2026-11-30T10:00:00.000Z',
      deliveredAt: '2026-11-30T10:00:00.000Z',
      quietSince: '2026-11-30T10:00:00.000Z',
      reminders: [],
      due: [{ at: '2026-11-30T10:05:00.000Z', kind: 'remind' as const }],
      stalledAt: null,
      endedAt: null,
      expiresAt: null,
      turns: [],
      hold: null,
      holdUntil: null,
    };
    const shown = task({ id: 'a', version: 1, timeline });
    const [live] = mergeTask([shown], task({ id: 'a', version: 2, remindersSent: 1 }), open);
    expect([live?.version, live?.timeline]).toEqual([2, timeline]);
    const fresh = { ...timeline, reminders: ['2026-11-30T10:05:00.000Z'] };
    const [reread] = mergeTask([shown], task({ id: 'a', version: 2, timeline: fresh }), open);
    expect(reread?.timeline).toBe(fresh);
  });

  it('adds, replaces and removes by whether the task still belongs', () => {
    const a = task({ id: 'a', version: 1 });
    const b = task({ id: 'b', version: 1 });
    const list = [a, b];
    expect(mergeTask(list, task({ id: 'c' }), open).map((t) => t.id)).toEqual(['a', 'b', 'c']);
    const newer = task({ id: 'a', version: 2, lastWords: 'on it' });
    expect(mergeTask(list, newer, open)).toEqual([newer, b]);
    expect(mergeTask(list, task({ id: 'a', version: 2, state: 'completed' }), open)).toEqual([b]);
    expect(mergeTask(list, task({ id: 'z', state: 'completed' }), open)).toEqual(list);
  });

  it('ignores a change older than the one shown', () => {
    const shown = task({ id: 'a', version: 5, state: 'completed' });
    expect(mergeTask([shown], task({ id: 'a', version: 4, state: 'working' }), () => true)).toEqual([shown]);
  });
});

describe('recent', () => {
  it('sorts the last to end first and groups by local day', () => {
    const now = new Date(2026, 10, 30, 12, 0).getTime();
    const at = (d: number, h: number) => new Date(2026, 10, d, h, 0).toISOString();
    const sorted = sortRecent([
      task({ id: 'old', updatedAt: at(27, 9) }),
      task({ id: 'today', updatedAt: at(30, 8) }),
      task({ id: 'yesterday', updatedAt: at(29, 23) }),
      task({ id: 'today-later', updatedAt: at(30, 11) }),
    ]);
    expect(sorted.map((t) => t.id)).toEqual(['today-later', 'today', 'yesterday', 'old']);
    const groups = groupByDay(sorted, now);
    expect(groups.map((g) => [g.label === 'Today' || g.label === 'Yesterday' ? g.label : 'date', g.tasks.length])).toEqual([
      ['Today', 2],
      ['Yesterday', 1],
      ['date', 1],
    ]);
  });

  it('tells open from ended', () => {
    expect(isOpen(task({ state: 'input-required' }))).toBe(true);
    // Open on the daemon (not an ending), so a live change must not drop it from the open list.
    expect(isOpen(task({ state: 'auth-required' }))).toBe(true);
    expect(isOpen(task({ state: 'canceled' }))).toBe(false);
  });
});
