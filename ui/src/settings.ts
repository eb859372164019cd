// The settings panel's fields and their checks. The daemon's `Settings::set` (crates/core
// settings.rs) is what decides whether a value is valid; the checks here only catch typos
// before a round trip, so they accept the same forms and the API's answer always has the
// last word (its error is shown next to the field it names).

import type { SettingsMap } from './types';

export type SettingKind = 'duration' | 'ladder' | 'count' | 'bool' | 'text';

export interface SettingField {
  key: string;
  label: string;
  help: string;
  kind: SettingKind;
  group: string;
  /** The largest value a `count` takes (60 unless said). */
  max?: number;
}

/** The keys the daemon knows today, in the order the panel shows them. */
export const SETTING_FIELDS: readonly SettingField[] = [
  {
    key: 'reminders.first_after.claude-code',
    label: 'First reminder (Claude Code)',
    help: 'Quiet time before a Claude Code session holding a task is first reminded.',
    kind: 'duration',
    group: 'Reminders',
  },
  {
    key: 'reminders.first_after.default',
    label: 'First reminder (other agents)',
    help: 'The same for every other kind of agent.',
    kind: 'duration',
    group: 'Reminders',
  },
  {
    key: 'reminders.ladder',
    label: 'Further reminders',
    help: 'Each one after this much more quiet, comma-separated (1m,2m,5m,10m).',
    kind: 'ladder',
    group: 'Reminders',
  },
  {
    key: 'reminders.stall_after',
    label: 'Stalled after',
    help: 'With no answer this long after the last reminder, the task stalls and you are told.',
    kind: 'duration',
    group: 'Reminders',
  },
  {
    key: 'reminders.hourly_cap',
    label: 'Reminders per hour',
    help: 'At most this many messages into one session per hour (1–60).',
    kind: 'count',
    group: 'Reminders',
  },
  {
    key: 'reminders.paused',
    label: 'Pause all reminders',
    help: 'No session is reminded until you resume.',
    kind: 'bool',
    group: 'Reminders',
  },
  {
    key: 'tasks.expire_after',
    label: 'Expire open tasks after',
    help: 'An open task older than this is canceled as expired.',
    kind: 'duration',
    group: 'Tasks',
  },
  {
    key: 'tasks.keep_ended',
    label: 'Keep ended tasks for',
    help: 'Ended tasks stay in Recent (and for their askers) this long.',
    kind: 'duration',
    group: 'Tasks',
  },
  {
    key: 'a2a.blocking_wait_max',
    label: 'Longest blocking wait',
    help: "An asker's blocking request is answered with the task as it is after this long.",
    kind: 'duration',
    group: 'Tasks',
  },
  {
    key: 'a2a.streams_per_caller',
    label: 'Streams per asker',
    help: 'At most this many streams and blocking requests open at once for each asker (and for you); more are refused (1–1000).',
    kind: 'count',
    group: 'Tasks',
    max: 1000,
  },
  {
    key: 'notifications.enabled',
    label: 'Desktop notifications',
    help: 'Tell me when a task stalls or a session ends with tasks open.',
    kind: 'bool',
    group: 'App',
  },
  {
    key: 'sessions.create_desks',
    label: 'Desks for new directories',
    help: 'A session started in a directory no desk covers gets a desk of its own.',
    kind: 'bool',
    group: 'App',
  },
];

/**
 * The fields to show for the settings the daemon sent: the known ones in their order, then any
 * key this UI doesn't know yet (a newer daemon), as plain text the API will check.
 */
export function fieldsFor(settings: SettingsMap): SettingField[] {
  const known = SETTING_FIELDS.filter((f) => f.key in settings);
  const extra = Object.keys(settings)
    .filter((key) => !SETTING_FIELDS.some((f) => f.key === key))
    .sort()
    .map((key): SettingField => ({ key, label: key, help: '', kind: 'text', group: 'Other' }));
  return [...known, ...extra];
}

const DURATION = /^\s*(\d+)([smhd])\s*$/;

function isDuration(text: string): boolean {
  const m = DURATION.exec(text);
  return m !== null && Number(m[1]) > 0;
}

/** Why `value` can't be right for `field`, in the daemon's words, or null when it looks fine. */
export function validateSetting(field: SettingField, value: string): string | null {
  switch (field.kind) {
    case 'duration':
      return isDuration(value) ? null : 'A duration such as 90s, 5m, 2h or 7d (more than zero).';
    case 'ladder':
      return value.split(',').every(isDuration)
        ? null
        : 'Comma-separated durations such as 1m,2m,5m,10m (at least one step).';
    case 'count': {
      const max = field.max ?? 60;
      const n = /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
      return n >= 1 && n <= max ? null : `A whole number from 1 to ${max}.`;
    }
    case 'bool':
      return value === 'true' || value === 'false' ? null : 'On or off.';
    case 'text':
      return null;
  }
}

/** The settings whose draft differs from what was saved: what a save sends. */
export function changedSettings(saved: SettingsMap, draft: SettingsMap): SettingsMap {
  const out: SettingsMap = {};
  for (const [key, value] of Object.entries(draft)) {
    if (saved[key] !== value) out[key] = value;
  }
  return out;
}

/**
 * The form once the saved settings moved from `before` to `after` (a save here, or a change
 * made elsewhere and heard live): every field shows its new value, except those the owner has
 * edited since `before`, which keep the edit, so nothing typed is lost and no field changed
 * elsewhere is sent back stale.
 */
export function rebaseDraft(before: SettingsMap, after: SettingsMap, draft: SettingsMap): SettingsMap {
  return { ...after, ...changedSettings(before, draft) };
}

/**
 * Which setting an API error is about. The daemon names the key in its message
 * (`invalid value "soon" for reminders.stall_after: ...`); the longest key found wins, so a
 * key that is a prefix of another can't be picked by mistake.
 */
export function keyInMessage(message: string, keys: readonly string[]): string | null {
  let best: string | null = null;
  for (const key of keys) {
    if (message.includes(key) && (best === null || key.length > best.length)) best = key;
  }
  return best;
}
