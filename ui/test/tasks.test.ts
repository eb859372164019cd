import { describe, expect, it } from 'vitest';
import { countTasks, firstLine, formatAge, formatAgo, groupByDesk, stateLabel } from '../src/tasks';
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
  it('counts stalled tasks', () => {
    expect(countTasks([task(), task({ id: 'b', stalledAt: '2026-11-30T10:30:00.000Z' })])).toEqual({
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

  it('names states the way the owner thinks of them', () => {
    expect(stateLabel(task({ state: 'submitted', queuePosition: 1 }))).toBe('queued');
    expect(stateLabel(task({ state: 'input-required' }))).toBe('blocked');
    expect(stateLabel(task({ state: 'canceled', expiredAt: '2026-11-30T10:00:00.000Z' }))).toBe('expired');
  });
});
