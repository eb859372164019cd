import type { DeskView, SessionView, TaskView } from '../src/types';

/** A plausible open task; tests override only what they are about. */
export function task(overrides: Partial<TaskView> = {}): TaskView {
  return {
    id: 'task-1',
    contextId: 'ctx-1',
    desk: 'web',
    asker: 'planner',
    state: 'working',
    label: 'working',
    labelKind: 'working',
    request: 'Add a --json flag\n\nThe list command should print JSON.',
    createdAt: '2026-11-30T10:00:00.000Z',
    updatedAt: '2026-11-30T10:05:00.000Z',
    queuePosition: null,
    remindersSent: 0,
    lastReminderAt: null,
    stalledAt: null,
    expiredAt: null,
    acknowledgedAt: null,
    lastWords: null,
    waitingOnOwner: false,
    deliveredAt: null,
    statusText: null,
    version: 1,
    ...overrides,
  };
}

/** A claude-code desk with no delivery command. */
export function desk(overrides: Partial<DeskView> = {}): DeskView {
  return {
    name: 'web',
    agent: 'claude-code',
    dir: '/home/me/web',
    deliverCommand: null,
    autoLaunch: false,
    openTasks: 0,
    liveSession: false,
    needsSession: false,
    autoLaunchRetryAt: null,
    autoLaunchGaveUp: false,
    createdAt: '2026-11-30T09:00:00.000Z',
    ...overrides,
  };
}

/** An idle Claude Code session at desk web, started in a terminal, asking nothing. */
export function session(overrides: Partial<SessionView> = {}): SessionView {
  return {
    id: 's-1',
    desk: 'web',
    agent: 'claude-code',
    activity: 'idle',
    since: '2026-11-30T10:00:00.000Z',
    background: [],
    rateLimitedUntil: null,
    wakesAt: null,
    lastWords: null,
    tmuxPane: null,
    pid: null,
    headless: false,
    updatedAt: '2026-11-30T10:00:00.000Z',
    remindersPaused: false,
    permission: null,
    deliveryProblem: null,
    ...overrides,
  };
}
