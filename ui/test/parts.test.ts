// The task list's state badge shows the daemon's label (`core::Task::label`, the words the CLI
// and the digest show too), styled by its kind; the UI derives no word of its own.

import { describe, expect, it } from 'vitest';
import type { VNode } from 'preact';
import { StateBadges, TaskRow } from '../src/parts';
import { task } from './fixtures';

type Props = { class?: string; children?: unknown };

/** Every element of a vnode tree whose component is `type`, and the badges under it. */
function find(node: unknown, match: (v: VNode<Props>) => boolean, out: VNode<Props>[] = []): VNode<Props>[] {
  if (Array.isArray(node)) {
    for (const n of node) find(n, match, out);
  } else if (node !== null && typeof node === 'object' && 'props' in node) {
    const v = node as VNode<Props>;
    if (match(v)) out.push(v);
    find(v.props.children, match, out);
  }
  return out;
}

/** The badges a row draws: its StateBadges, called as the renderer would. */
function badges(row: unknown): { class: string; text: unknown }[] {
  return find(row, (v) => v.type === StateBadges).flatMap((v) =>
    find(StateBadges(v.props as unknown as Parameters<typeof StateBadges>[0]), (b) => String(b.props.class ?? '').startsWith('badge')).map((b) => ({
      class: String(b.props.class),
      text: b.props.children,
    })),
  );
}

describe('the task list', () => {
  const now = Date.parse('2026-11-30T12:00:00.000Z');

  it('shows a stalled task as stalled, the words the CLI prints', () => {
    const stalled = task({ stalledAt: '2026-11-30T11:00:00.000Z', label: 'stalled', labelKind: 'stalled' });
    expect(badges(TaskRow({ task: stalled, now }))).toEqual([{ class: 'badge badge-stalled', text: 'stalled' }]);
  });

  it("shows the daemon's words for every state, a queue place and a wait on the owner included", () => {
    for (const [label, labelKind] of [
      ['queued #2', 'queued'],
      ['waiting on you', 'waiting-on-owner'],
      ['blocked', 'blocked'],
      ['expired', 'expired'],
      ['completed', 'completed'],
    ] as const) {
      const t = task({ state: 'working', label, labelKind });
      expect(badges(TaskRow({ task: t, now }))).toEqual([{ class: `badge badge-${labelKind}`, text: label }]);
    }
  });
});
