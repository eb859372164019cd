// Settings: every key the daemon has, checked as you type and again by the API when saved.
// Only changed keys are sent, all in one request, so one bad value saves nothing; the API's
// error is shown next to the field its message names. Autostart is the tray app's own
// setting and only appears there.

import { useEffect, useRef, useState } from 'preact/hooks';
import { asDataError, type DataSource } from '../data';
import type { Load } from '../hooks';
import { valueOf } from '../hooks';
import { Code, ErrorBanner, Loading } from '../parts';
import { changedSettings, fieldsFor, keyInMessage, rebaseDraft, validateSetting, type SettingField } from '../settings';
import type { SettingsMap } from '../types';

export function SettingsView({
  data,
  load,
  onSaved,
}: {
  data: DataSource;
  load: Load<SettingsMap>;
  onSaved: (settings: SettingsMap) => void;
}) {
  const saved = valueOf(load);
  const [draft, setDraft] = useState<SettingsMap | null>(saved);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [formError, setFormError] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  const formRef = useRef<HTMLFormElement>(null);

  // A change saved elsewhere (a browser, the tray, the CLI, this form) shows here at once, in
  // every field but those the owner has edited since the form last showed what was saved.
  const savedKey = saved ? JSON.stringify(saved) : '';
  const base = useRef(saved);
  useEffect(() => {
    if (!saved) return;
    const before = base.current;
    base.current = saved;
    setDraft((d) => (d === null || before === null ? saved : rebaseDraft(before, saved, d)));
  }, [savedKey]);

  if (!saved || !draft) {
    return (
      <div class="view">
        <h2 class="visually-hidden" tabIndex={-1} data-view-heading>
          Settings
        </h2>
        {load.status === 'error' ? <ErrorBanner title="Can't load the settings" error={load.error} /> : <Loading />}
      </div>
    );
  }

  const fields = fieldsFor(saved);
  const changes = changedSettings(saved, draft);
  const dirty = Object.keys(changes).length > 0;

  const focusField = (key: string) => {
    formRef.current?.querySelector<HTMLElement>(`[name="${CSS.escape(key)}"]`)?.focus();
  };

  const set = (field: SettingField, value: string) => {
    setDraft({ ...draft, [field.key]: value });
    setStatus(null);
    setErrors((prev) => {
      const next = { ...prev };
      const problem = validateSetting(field, value);
      if (problem) next[field.key] = problem;
      else delete next[field.key];
      return next;
    });
  };

  const save = async (e: Event) => {
    e.preventDefault();
    setFormError(null);
    setStatus(null);
    const found: Record<string, string> = {};
    for (const f of fields) {
      const problem = f.key in changes ? validateSetting(f, changes[f.key] ?? '') : null;
      if (problem) found[f.key] = problem;
    }
    setErrors(found);
    const first = fields.find((f) => f.key in found);
    if (first) return focusField(first.key);
    if (!dirty) return;
    setSaving(true);
    try {
      const after = await data.saveSettings(changes);
      onSaved(after);
      setDraft(after);
      setStatus(`Saved ${Object.keys(changes).length === 1 ? 'the change' : `${Object.keys(changes).length} changes`}; in effect now.`);
    } catch (err) {
      const error = asDataError(err);
      const key = keyInMessage(error.message, fields.map((f) => f.key));
      if (key) {
        setErrors({ [key]: error.message });
        focusField(key);
      } else {
        setFormError(error.message);
      }
    } finally {
      setSaving(false);
    }
  };

  const groups = [...new Set(fields.map((f) => f.group))];
  return (
    <div class="view">
      <h2 class="visually-hidden" tabIndex={-1} data-view-heading>
        Settings
      </h2>
      {load.status === 'error' && <ErrorBanner title="Can't refresh the settings" error={load.error} />}
      <form ref={formRef} class="settings" onSubmit={save} noValidate>
        <p class="note">
          <Code text="Durations take s, m, h or d: `90s`, `5m`, `2h`, `7d`." />
        </p>
        {groups.map((group) => (
          <fieldset key={group}>
            <legend>{group}</legend>
            {fields
              .filter((f) => f.group === group)
              .map((f) => (
                <Field key={f.key} field={f} value={draft[f.key] ?? ''} error={errors[f.key] ?? null} onChange={(v) => set(f, v)} />
              ))}
            {group === 'App' && data.canAutostart && <Autostart data={data} />}
          </fieldset>
        ))}
        {formError && (
          <p class="outcome is-error" role="alert">
            {formError}
          </p>
        )}
        <div class="row form-actions">
          <button type="submit" class="primary" disabled={saving || !dirty}>
            {saving ? 'Saving…' : 'Save'}
          </button>
          <button
            type="button"
            disabled={saving || !dirty}
            onClick={() => {
              setDraft(saved);
              setErrors({});
              setFormError(null);
            }}
          >
            Revert
          </button>
          {status && (
            <span class="outcome" role="status">
              {status}
            </span>
          )}
        </div>
      </form>
    </div>
  );
}

function Field({ field, value, error, onChange }: { field: SettingField; value: string; error: string | null; onChange: (value: string) => void }) {
  const id = `setting-${field.key.replace(/[^a-z0-9-]/gi, '-')}`;
  const described = [field.help ? `${id}-help` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ');
  const control =
    field.kind === 'bool' ? (
      <input
        id={id}
        name={field.key}
        type="checkbox"
        checked={value === 'true'}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={described || undefined}
        onChange={(e) => onChange(e.currentTarget.checked ? 'true' : 'false')}
      />
    ) : (
      <input
        id={id}
        name={field.key}
        type="text"
        inputMode={field.kind === 'count' ? 'numeric' : undefined}
        spellcheck={false}
        autoComplete="off"
        value={value}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={described || undefined}
        onInput={(e) => onChange(e.currentTarget.value)}
      />
    );
  return (
    <div class={`field kind-${field.kind}${error ? ' has-error' : ''}`} data-setting={field.key}>
      {field.kind === 'bool' ? (
        <label class="check" for={id}>
          {control}
          <span>{field.label}</span>
        </label>
      ) : (
        <>
          <label for={id}>{field.label}</label>
          {control}
        </>
      )}
      {field.help && (
        <p class="help" id={`${id}-help`}>
          {field.help} <span class="key mono">{field.key}</span>
        </p>
      )}
      {error && (
        <p class="field-error" id={`${id}-error`} role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

/** The tray app's start-at-login switch, saved at once through its own command. */
function Autostart({ data }: { data: DataSource }) {
  const [enabled, setEnabled] = useState<boolean | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    data.getAutostart().then(setEnabled, (err: unknown) => setError(asDataError(err).message));
  }, [data]);
  const toggle = async (on: boolean) => {
    setBusy(true);
    setError(null);
    try {
      setEnabled(await data.setAutostart(on));
    } catch (err) {
      setError(asDataError(err).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="field kind-bool" data-setting="autostart">
      <label class="check" for="setting-autostart">
        <input
          id="setting-autostart"
          type="checkbox"
          checked={enabled === true}
          disabled={enabled === null || busy}
          onChange={(e) => void toggle(e.currentTarget.checked)}
        />
        <span>Start at login</span>
      </label>
      <p class="help">Taskkeeper starts hidden in the tray when you log in. Saved at once.</p>
      {error && (
        <p class="field-error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}
