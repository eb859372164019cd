// The settings panel's fields and their checks, drawn from the daemon's settings catalogue
// (`GET /api/settings/catalogue`: core's settings table, with each setting's kind, range,
// units, default, label, help and group), so nothing here restates a setting. The checks only
// catch typos before a round trip, by the catalogue's kind and range, in its words; the API's
// answer always has the last word (its error is shown next to the field it names).

import type { SettingView, SettingsMap } from './types';

/** A field of the panel: a setting as the catalogue describes it. */
export type SettingField = SettingView;

/**
 * The fields to show for the settings the daemon sent: the catalogue's shown settings in its
 * order, then any key the catalogue does not describe (it describes every one the daemon has)
 * as plain text the API will check.
 */
export function fieldsFor(catalogue: readonly SettingView[], settings: SettingsMap): SettingField[] {
  const known = catalogue.filter((f) => f.shown && f.key in settings);
  const extra = Object.keys(settings)
    .filter((key) => !catalogue.some((f) => f.key === key))
    .sort()
    .map(
      (key): SettingField => ({
        key,
        group: 'Other',
        label: key,
        help: '',
        // Free text: the API checks it.
        kind: 'shortcut',
        min: null,
        max: null,
        units: [],
        default: '',
        expected: '',
        shown: true,
      }),
    );
  return [...known, ...extra];
}

/** What each unit the catalogue names multiplies by: a size's in bytes. */
const BYTES: Record<string, number> = { B: 1, KiB: 1024, MiB: 1024 * 1024 };

/** A number and one of `units` (`none` allowed: the bare number), or null. */
function amount(text: string, units: readonly string[], bare: boolean): { n: number; unit: string } | null {
  const m = /^\s*(\d+)\s*([A-Za-z]*)\s*$/.exec(text);
  if (m === null) return null;
  const unit = m[2] ?? '';
  if (unit === '' ? !bare : !units.includes(unit)) return null;
  return { n: Number(m[1]), unit };
}

/** A positive number and its unit, written together (`90s`), as the daemon reads it. */
function isDuration(field: SettingField, text: string): boolean {
  const a = amount(text, field.units, false);
  return a !== null && a.n > 0 && !/\d\s+[A-Za-z]/.test(text);
}

function inRange(field: SettingField, n: number): boolean {
  return (field.min === null || n >= field.min) && (field.max === null || n <= field.max);
}

/** Why `value` can't be right for `field`, in the daemon's words, or null when it looks fine. */
export function validateSetting(field: SettingField, value: string): string | null {
  const ok = (() => {
    switch (field.kind) {
      case 'duration':
        return isDuration(field, value);
      case 'ladder':
        return value.split(',').every((step) => isDuration(field, step));
      case 'count':
        return /^\s*\d+\s*$/.test(value) && inRange(field, Number(value));
      case 'bytes': {
        const a = amount(value, field.units, true);
        return a !== null && inRange(field, a.n * (BYTES[a.unit === '' ? 'B' : a.unit] ?? NaN));
      }
      case 'bool':
        return value === 'true' || value === 'false';
      case 'time-of-day': {
        const v = value.trim();
        const m = /^(\d\d):(\d\d)$/.exec(v);
        return v === 'off' || v === 'login' || (m !== null && Number(m[1]) <= 23 && Number(m[2]) <= 59);
      }
      case 'shortcut':
      case 'text':
        // Free words: the daemon checks them and its answer shows next to the field.
        return true;
    }
  })();
  return ok ? null : sentence(field.expected);
}

/** The daemon's words as a sentence: capitalised, with a full stop. */
function sentence(words: string): string {
  const text = words.trim();
  if (text === '') return 'Not a value this setting takes.';
  return `${text[0]?.toUpperCase() ?? ''}${text.slice(1)}${text.endsWith('.') ? '' : '.'}`;
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
