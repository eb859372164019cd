// The settings panel's fields and their checks. The daemon's `Settings::set` (crates/core
// settings.rs) is what decides whether a value is valid; the checks here only catch typos
// before a round trip, so they accept the same forms and the API's answer always has the
// last word (its error is shown next to the field it names).

import type { SettingsMap } from './types';

export type SettingKind = 'duration' | 'ladder' | 'count' | 'bytes' | 'bool' | 'text' | 'time-of-day';

export interface SettingField {
  key: string;
  label: string;
  help: string;
  kind: SettingKind;
  group: string;
  /** The largest whole number a 'count' takes (from 1); 60 unless said. */
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
    help: 'Desktop notifications at all (each kind below has its own switch).',
    kind: 'bool',
    group: 'App',
  },
  // One switch per kind of desktop notification (crates/core settings.rs `NoticeKind`).
  {
    key: 'notifications.stalled',
    label: 'When a task stalls',
    help: 'Notify me when a task stops after its last reminder (Open, Remind now, Snooze 1 h).',
    kind: 'bool',
    group: 'App',
  },
  {
    key: 'notifications.permission',
    label: 'When a session asks me',
    help: 'Notify me when a session waits for me to allow a tool (Allow, Deny, Open).',
    kind: 'bool',
    group: 'App',
  },
  {
    key: 'notifications.session_ended',
    label: 'When a session ends holding tasks',
    help: 'Notify me when a session ends with tasks still open (Launch a session, Open).',
    kind: 'bool',
    group: 'App',
  },
  {
    key: 'notifications.blocked',
    label: 'When a task waits on its asker',
    help: 'Notify me when a worker says it needs something from the asker.',
    kind: 'bool',
    group: 'App',
  },
  {
    key: 'notifications.finished',
    label: 'When a task is finished',
    help: 'Notify me when a worker finishes a task.',
    kind: 'bool',
    group: 'App',
  },
  {
    key: 'app.shortcut',
    label: 'Shortcut to show the window',
    help: 'A global shortcut that shows and hides the window, such as CmdOrCtrl+Alt+K; off for none.',
    kind: 'text',
    group: 'App',
  },
  {
    key: 'sessions.create_desks',
    label: 'Desks for new directories',
    help: 'A session started in a directory no desk covers gets a desk of its own.',
    kind: 'bool',
    group: 'App',
  },
  // The limits: how much any one caller can make Taskkeeper keep (crates/core limits.rs).
  {
    key: 'limits.open_tasks_per_asker',
    label: 'Open tasks per asker',
    help: 'An asker (or a desk asking another) with this many open tasks is refused another until one ends.',
    kind: 'count',
    max: 100000,
    group: 'Limits',
  },
  {
    key: 'limits.message_bytes',
    label: 'Largest message',
    help: 'A message from an asker larger than this is refused (256KiB, 1MiB).',
    kind: 'bytes',
    group: 'Limits',
  },
  {
    key: 'limits.task_bytes',
    label: 'Largest task',
    help: "A follow-up that would make a task's history and results larger than this is refused.",
    kind: 'bytes',
    group: 'Limits',
  },
  {
    key: 'limits.file_bytes',
    label: 'Largest file',
    help: 'A file an asker sends in a message, or one a worker attaches to a task, larger than this is refused.',
    kind: 'bytes',
    group: 'Limits',
  },
  {
    key: 'limits.reply_history',
    label: 'History in replies',
    help: 'Replies to askers carry this many of the latest messages unless the asker asks for more (historyLength).',
    kind: 'count',
    max: 100000,
    group: 'Limits',
  },
  {
    key: 'sessions.keep_ended',
    label: 'Keep ended sessions for',
    help: 'A session that ended is forgotten this long after its last change.',
    kind: 'duration',
    group: 'Limits',
  },
  {
    key: 'sessions.max',
    label: 'Sessions kept',
    help: 'At most this many sessions; a new one takes the place of the oldest ended one, and is refused when all are live.',
    kind: 'count',
    max: 100000,
    group: 'Limits',
  },
  {
    key: 'sessions.create_desks_max',
    label: 'Desks sessions may create',
    help: 'Sessions create a desk of their own only while there are fewer desks than this.',
    kind: 'count',
    max: 100000,
    group: 'Limits',
  },
  {
    key: 'push.allow_loopback_targets',
    label: 'Push to this machine',
    help: "Askers' webhooks may point at this machine (127.0.0.1, localhost and their other spellings), where local services that trust loopback listen. Never at Taskkeeper's own port.",
    kind: 'bool',
    group: 'Push notifications',
  },
  {
    key: 'push.allow_private_targets',
    label: 'Push to private addresses',
    help: "Askers' webhooks may point into private, link-local and other special address ranges (public addresses always may).",
    kind: 'bool',
    group: 'Push notifications',
  },
  {
    key: 'push.retry_first',
    label: 'First retry after',
    help: 'A push the webhook did not take is tried again after this, doubling each time.',
    kind: 'duration',
    group: 'Push notifications',
  },
  {
    key: 'push.retry_max',
    label: 'Longest wait between retries',
    help: 'The doubling stops here.',
    kind: 'duration',
    group: 'Push notifications',
  },
  {
    key: 'push.give_up_after',
    label: 'Give up after',
    help: 'A push still failing this long after its change is dropped (and logged).',
    kind: 'duration',
    group: 'Push notifications',
  },
  {
    key: 'push.configs_per_task',
    label: 'Webhooks per task',
    help: 'The most webhooks one task may have.',
    kind: 'count',
    max: 100,
    group: 'Push notifications',
  },
  {
    key: 'digest.at',
    label: 'Offer the digest',
    help: 'login (each time Taskkeeper starts), a time of day such as 08:30 (24-hour, local time), or off.',
    kind: 'time-of-day',
    group: 'Digest',
  },
  // The listener for askers on other machines (crates/core network.rs): off unless it names
  // an address; it serves A2A and the cards only, and takes askers' tokens only.
  {
    key: 'network.listen',
    label: 'Listen for askers on other machines',
    help: 'off, or an address and port such as 0.0.0.0:7718. Only A2A and the Agent Cards are served there, to askers with their tokens.',
    kind: 'text',
    group: 'Askers on other machines',
  },
  {
    key: 'network.tls',
    label: 'TLS',
    help: 'self-signed (made once; askers pin its fingerprint), files (your certificate and key, read again when renewed), proxy (Tailscale serve, Caddy or nginx in front) or off.',
    kind: 'text',
    group: 'Askers on other machines',
  },
  {
    key: 'network.cert_file',
    label: 'Certificate file',
    help: 'With TLS files: the certificate chain (PEM), such as /etc/letsencrypt/live/box/fullchain.pem.',
    kind: 'text',
    group: 'Askers on other machines',
  },
  {
    key: 'network.key_file',
    label: 'Key file',
    help: "With TLS files: the certificate's private key (PEM).",
    kind: 'text',
    group: 'Askers on other machines',
  },
  {
    key: 'network.public_url',
    label: 'Public URL',
    help: 'The https:// URL askers reach it at, which the cards name (empty: the listen address). Needed behind a proxy.',
    kind: 'text',
    group: 'Askers on other machines',
  },
  {
    key: 'network.trusted_proxies',
    label: 'Trusted proxies',
    help: 'Behind a proxy: its addresses (or networks), comma-separated; only their X-Forwarded-For and X-Forwarded-Host are believed.',
    kind: 'text',
    group: 'Askers on other machines',
  },
  {
    key: 'network.insecure_http',
    label: 'Allow plain HTTP beyond this machine',
    help: "Plain HTTP on an address other than loopback: askers' tokens cross the network unencrypted. Off unless you mean it.",
    kind: 'bool',
    group: 'Askers on other machines',
  },
  {
    key: 'network.requests_per_minute',
    label: 'Requests per minute',
    help: 'Each asker on the network (without a token, each address) may make this many requests a minute (1–10000000).',
    kind: 'count',
    max: 10000000,
    group: 'Askers on other machines',
  },
  {
    key: 'network.streams_per_minute',
    label: 'Streams per minute',
    help: 'Each asker on the network may open this many streams and blocking requests a minute (1–10000000).',
    kind: 'count',
    max: 10000000,
    group: 'Askers on other machines',
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
const BYTES = /^\s*(\d+)\s*(B|KiB|MiB)?\s*$/;
const UNIT: Record<string, number> = { B: 1, KiB: 1024, MiB: 1024 * 1024 };

/** The daemon's sizes: bytes, KiB or MiB, from 1 KiB to 1024 MiB. */
function isBytes(text: string): boolean {
  const m = BYTES.exec(text);
  if (m === null) return false;
  const bytes = Number(m[1]) * (UNIT[m[2] ?? 'B'] ?? 0);
  return bytes >= 1024 && bytes <= 1024 * 1024 * 1024;
}

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
    case 'bytes':
      return isBytes(value) ? null : 'A size such as 4096B, 256KiB or 2MiB (from 1KiB to 1024MiB).';
    case 'bool':
      return value === 'true' || value === 'false' ? null : 'On or off.';
    case 'time-of-day': {
      const v = value.trim();
      const m = /^(\d\d):(\d\d)$/.exec(v);
      const ok = v === 'off' || v === 'login' || (m !== null && Number(m[1]) <= 23 && Number(m[2]) <= 59);
      return ok ? null : 'off, login, or a time of day such as 08:30 (24-hour, local time).';
    }
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
