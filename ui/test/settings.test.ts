import { describe, expect, it } from 'vitest';
import { changedSettings, fieldsFor, keyInMessage, rebaseDraft, validateSetting, type SettingField } from '../src/settings';
import type { SettingView } from '../src/types';

/** A row of the daemon's catalogue (`GET /api/settings/catalogue`), as it sends it. */
const row = (key: string, kind: SettingView['kind'], more: Partial<SettingView> = {}): SettingView => {
  const units = kind === 'duration' || kind === 'ladder' ? ['s', 'm', 'h', 'd'] : kind === 'bytes' ? ['B', 'KiB', 'MiB'] : [];
  const expected: Record<SettingView['kind'], string> = {
    duration: 'a duration such as 90s, 5m, 2h or 7d (more than zero)',
    ladder: 'a comma-separated list of durations such as 1m,2m,5m,10m (at least one step)',
    count: `a whole number from ${more.min ?? 1} to ${more.max ?? 60}`,
    bytes: 'a size such as 4096B, 256KiB or 2MiB (from 1KiB to 1024MiB; B, KiB or MiB)',
    bool: 'true or false',
    shortcut: 'modifiers and one key joined by +, or off for none',
    'time-of-day': 'off, login, or a time of day such as 08:30 (24-hour, local time)',
    text: 'off, or an address and port such as 0.0.0.0:7718 or [::]:7718',
  };
  return {
    key,
    group: 'Reminders',
    label: key,
    help: `What ${key} does.`,
    kind,
    min: kind === 'count' ? 1 : kind === 'bytes' ? 1024 : null,
    max: kind === 'count' ? 60 : kind === 'bytes' ? 1024 * 1024 * 1024 : null,
    units,
    default: '',
    expected: expected[kind],
    shown: true,
    ...more,
  };
};

const CATALOGUE: SettingView[] = [
  row('reminders.first_after.default', 'duration'),
  row('reminders.ladder', 'ladder', { label: 'Further reminders' }),
  row('reminders.stall_after', 'duration'),
  row('reminders.hourly_cap', 'count', { min: 1, max: 60 }),
  row('a2a.streams_per_caller', 'count', { min: 1, max: 1000, group: 'Tasks' }),
  row('notifications.enabled', 'bool', { group: 'App' }),
  row('limits.open_tasks_per_asker', 'count', { min: 1, max: 100000, group: 'Limits' }),
  row('limits.task_bytes', 'bytes', { group: 'Limits' }),
  row('sessions.keep_ended', 'duration', { group: 'Limits' }),
  row('digest.at', 'time-of-day', { group: 'Digest' }),
  row('network.listen', 'text', { group: 'Askers on other machines' }),
];

const field = (key: string): SettingField => {
  const f = CATALOGUE.find((x) => x.key === key);
  if (!f) throw new Error(key);
  return f;
};

describe('settings checks', () => {
  it("draws every field from the daemon's catalogue, its order, its groups, and keys it does not describe at the end", () => {
    const settings = { 'zeta.new': 'x', 'reminders.ladder': '1m', 'reminders.first_after.default': '2m', 'notifications.enabled': 'true' };
    const hidden = row('notifications.enabled', 'bool', { group: 'App', shown: false });
    const fields = fieldsFor([...CATALOGUE.filter((f) => f.key !== 'notifications.enabled'), hidden], settings);
    expect(fields.map((f) => [f.key, f.kind, f.group, f.label])).toEqual([
      ['reminders.first_after.default', 'duration', 'Reminders', 'reminders.first_after.default'],
      ['reminders.ladder', 'ladder', 'Reminders', 'Further reminders'],
      ['zeta.new', 'shortcut', 'Other', 'zeta.new'],
    ]);
  });

  it("checks a value by the catalogue's range and answers in its words", () => {
    // A range no setting has today: the check is the catalogue's, not the UI's.
    const odd = row('made.up', 'count', { min: 3, max: 5 });
    for (const ok of ['3', '5']) expect(validateSetting(odd, ok)).toBeNull();
    for (const bad of ['2', '6']) expect(validateSetting(odd, bad)).toBe('A whole number from 3 to 5.');
    const small = row('made.up.size', 'bytes', { min: 2048, max: 4096, units: ['KiB'] });
    // A bare number is bytes, as the daemon reads it; a unit the catalogue does not name is refused.
    for (const ok of ['2KiB', '4096']) expect(validateSetting(small, ok)).toBeNull();
    for (const bad of ['1KiB', '8KiB', '2048B', '1024']) expect(validateSetting(small, bad)).not.toBeNull();
  });

  it('accepts what the daemon accepts and refuses its refusals', () => {
    const stall = field('reminders.stall_after');
    for (const ok of ['90s', '5m', '2h', '7d', ' 30m ']) expect(validateSetting(stall, ok)).toBeNull();
    for (const bad of ['soon', '0m', '5w', '5', 'm', '', '-1m']) expect(validateSetting(stall, bad)).not.toBeNull();

    const digestAt = field('digest.at');
    for (const ok of ['off', 'login', '08:30', '23:59', ' 00:00 ']) expect(validateSetting(digestAt, ok)).toBeNull();
    for (const bad of ['8:30', '24:00', '08:60', 'noon', '']) expect(validateSetting(digestAt, bad)).not.toBeNull();

    const ladder = field('reminders.ladder');
    expect(validateSetting(ladder, '10s, 20s,1m')).toBeNull();
    for (const bad of ['', '1m,,2m', '1m,', 'x']) expect(validateSetting(ladder, bad)).not.toBeNull();

    const cap = field('reminders.hourly_cap');
    expect(validateSetting(cap, '6')).toBeNull();
    expect(validateSetting(cap, '60')).toBeNull();
    for (const bad of ['0', '61', '-1', '2.5', 'six', '']) expect(validateSetting(cap, bad)).not.toBeNull();

    const streams = field('a2a.streams_per_caller');
    for (const ok of ['1', '16', '1000']) expect(validateSetting(streams, ok)).toBeNull();
    for (const bad of ['0', '1001', 'many', '']) expect(validateSetting(streams, bad)).not.toBeNull();
    // Limits: counts up to 100000, sizes in B, KiB or MiB from 1 KiB to 1024 MiB.
    const open = field('limits.open_tasks_per_asker');
    for (const ok of ['1', '100', '100000']) expect(validateSetting(open, ok)).toBeNull();
    for (const bad of ['0', '100001', '2.5', '']) expect(validateSetting(open, bad)).not.toBeNull();
    const bytes = field('limits.task_bytes');
    for (const ok of ['2MiB', '256KiB', ' 4096 ', '1024B', '512 KiB', '1024MiB']) expect(validateSetting(bytes, ok)).toBeNull();
    for (const bad of ['1023', '2MB', '1KB', '1025MiB', 'big', '', '-1KiB']) expect(validateSetting(bytes, bad)).not.toBeNull();
    expect(validateSetting(field('sessions.keep_ended'), '1d')).toBeNull();

    const bool = field('notifications.enabled');
    expect(validateSetting(bool, 'true')).toBeNull();
    expect(validateSetting(bool, 'yes')).not.toBeNull();
  });

  it('leaves words of a text setting to the daemon, which checks them', () => {
    for (const v of ['off', '0.0.0.0:7718', 'anything']) expect(validateSetting(field('network.listen'), v)).toBeNull();
  });

  it('sends only what changed', () => {
    expect(changedSettings({ a: '1', b: '2' }, { a: '1', b: '3' })).toEqual({ b: '3' });
    expect(changedSettings({ a: '1' }, { a: '1' })).toEqual({});
  });

  it('shows a change made elsewhere in every field but those being edited', () => {
    const before = { 'reminders.ladder': '1m,2m', 'reminders.paused': 'false', 'tasks.keep_ended': '7d' };
    const after = { 'reminders.ladder': '5m', 'reminders.paused': 'true', 'tasks.keep_ended': '7d' };
    // The owner is editing keep_ended and, as it happens, the ladder too: both edits stay.
    const draft = { ...before, 'reminders.ladder': '3m', 'tasks.keep_ended': '3d' };
    expect(rebaseDraft(before, after, draft)).toEqual({ 'reminders.ladder': '3m', 'reminders.paused': 'true', 'tasks.keep_ended': '3d' });
    // With no edits, the form is what was saved; after its own save, too.
    expect(rebaseDraft(before, after, before)).toEqual(after);
    expect(rebaseDraft(before, after, after)).toEqual(after);
    // What a save then sends is the edits alone, never the paused flag changed elsewhere.
    expect(changedSettings(after, rebaseDraft(before, after, draft))).toEqual({ 'reminders.ladder': '3m', 'tasks.keep_ended': '3d' });
  });

  it('finds the field an API error names, preferring the longest key', () => {
    const keys = ['reminders.paused', 'reminders.first_after.default', 'reminders.first_after.default.extra'];
    expect(keyInMessage('invalid value "x" for reminders.first_after.default: a duration', keys)).toBe(
      'reminders.first_after.default',
    );
    expect(keyInMessage('bad reminders.first_after.default.extra', keys)).toBe('reminders.first_after.default.extra');
    expect(keyInMessage('database is locked', keys)).toBeNull();
  });

});
