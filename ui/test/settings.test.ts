import { describe, expect, it } from 'vitest';
import { changedSettings, fieldsFor, keyInMessage, rebaseDraft, SETTING_FIELDS, validateSetting, type SettingField } from '../src/settings';

const field = (key: string): SettingField => {
  const f = SETTING_FIELDS.find((x) => x.key === key);
  if (!f) throw new Error(key);
  return f;
};

describe('settings checks', () => {
  it('knows every key the daemon has', () => {
    expect(SETTING_FIELDS.map((f) => f.key).sort()).toEqual(
      [
        'reminders.first_after.claude-code',
        'reminders.first_after.default',
        'reminders.ladder',
        'reminders.stall_after',
        'reminders.hourly_cap',
        'tasks.expire_after',
        'tasks.keep_ended',
        'a2a.blocking_wait_max',
        'a2a.streams_per_caller',
        'notifications.enabled',
        'sessions.create_desks',
        'reminders.paused',
        'limits.open_tasks_per_asker',
        'limits.message_bytes',
        'limits.task_bytes',
        'limits.file_bytes',
        'limits.reply_history',
        'sessions.keep_ended',
        'sessions.max',
        'sessions.create_desks_max',
        'push.allow_loopback_targets',
        'push.allow_private_targets',
        'push.retry_first',
        'push.retry_max',
        'push.give_up_after',
        'push.configs_per_task',
        'digest.at',
        'network.listen',
        'network.tls',
        'network.cert_file',
        'network.key_file',
        'network.public_url',
        'network.trusted_proxies',
        'network.insecure_http',
        'network.requests_per_minute',
        'network.streams_per_minute',
        'notifications.stalled',
        'notifications.permission',
        'notifications.blocked',
        'notifications.session_ended',
        'notifications.finished',
        'app.shortcut',
      ].sort(),
    );
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

  it("shows the daemon's keys in the panel's order, and keys it doesn't know yet at the end", () => {
    const fields = fieldsFor({ 'zeta.new': 'x', 'reminders.ladder': '1m', 'reminders.first_after.default': '2m' });
    expect(fields.map((f) => [f.key, f.kind])).toEqual([
      ['reminders.first_after.default', 'duration'],
      ['reminders.ladder', 'ladder'],
      ['zeta.new', 'text'],
    ]);
  });
});
