// Settings: every key the daemon has, drawn from its settings catalogue (label, help, group,
// kind and range: core's settings table, `GET /api/settings/catalogue`), checked as you type
// and again by the API when saved.
// Only changed keys are sent, all in one request, so one bad value saves nothing; the API's
// error is shown next to the field its message names. Autostart is the tray app's own
// setting and only appears there. Above the form, the agents found on this machine, each with
// Connect / Disconnect: the owner service runs the same code as `taskkeeper connect`. With the
// settings of the listener for askers on other machines, what it is doing: the URL and the
// certificate's fingerprint to hand an asker, or why it does not run.

import { useEffect, useRef, useState } from 'preact/hooks';
import { asDataError, type DataError, type DataSource } from '../data';
import type { Load } from '../hooks';
import { valueOf } from '../hooks';
import { Code, ErrorBanner, Loading } from '../parts';
import { changedSettings, fieldsFor, keyInMessage, rebaseDraft, validateSetting, type SettingField } from '../settings';
import type { AgentView, NetworkView, SettingView, SettingsMap } from '../types';

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
  const [catalogue, setCatalogue] = useState<SettingView[] | null>(null);
  const [catalogueError, setCatalogueError] = useState<DataError | null>(null);
  useEffect(() => {
    data.getSettingsCatalogue().then(setCatalogue, (err: unknown) => setCatalogueError(asDataError(err)));
  }, [data]);

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

  if (!saved || !draft || !catalogue) {
    return (
      <div class="view">
        <h2 class="visually-hidden" tabIndex={-1} data-view-heading>
          Settings
        </h2>
        {load.status === 'error' ? (
          <ErrorBanner title="Can't load the settings" error={load.error} />
        ) : catalogueError ? (
          <ErrorBanner title="Can't load what the settings are" error={catalogueError} />
        ) : (
          <Loading />
        )}
      </div>
    );
  }

  const fields = fieldsFor(catalogue, saved);
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
      <Agents data={data} />
      <form ref={formRef} class="settings" onSubmit={save} noValidate>
        {groups.map((group) => (
          <fieldset key={group}>
            <legend>{group}</legend>
            {fields
              .filter((f) => f.group === group)
              .map((f) => (
                <Field key={f.key} field={f} value={draft[f.key] ?? ''} error={errors[f.key] ?? null} onChange={(v) => set(f, v)} />
              ))}
            {group === 'App' && data.canAutostart && <Autostart data={data} />}
            {group === 'Askers on other machines' && <Network data={data} settingsKey={savedKey} />}
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
          {field.help} {field.kind !== 'bool' && field.expected && <span class="accepts">Takes {field.expected}.</span>}{' '}
          <span class="key mono">{field.key}</span>
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

/**
 * The listener for askers on other machines as it runs: read again whenever the settings
 * change (the daemon starts it again as they say), and on Refresh.
 */
function Network({ data, settingsKey }: { data: DataSource; settingsKey: string }) {
  const [network, setNetwork] = useState<NetworkView | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [asked, setAsked] = useState(0);
  useEffect(() => {
    let live = true;
    const read = () =>
      data.getNetwork().then(
        (n) => live && (setNetwork(n), setError(null)),
        (err: unknown) => live && setError(asDataError(err).message),
      );
    void read();
    // The restart after a change takes a moment: look again shortly.
    const later = setTimeout(() => void read(), 1000);
    return () => {
      live = false;
      clearTimeout(later);
    };
  }, [data, settingsKey, asked]);
  return (
    <div class="field network" data-network={network?.state ?? 'unknown'}>
      <div class="row">
        <strong>
          {network === null
            ? 'Reading…'
            : network.state === 'listening'
              ? `Listening on ${network.address ?? ''}`
              : network.state === 'failed'
                ? 'Not running'
                : 'Off'}
        </strong>
        <button type="button" onClick={() => setAsked((n) => n + 1)}>
          Refresh
        </button>
      </div>
      {network?.url && (
        <p class="help">
          Askers reach a desk at <span class="mono">{`${network.url}/a2a/<desk>`}</span> with their own token from{' '}
          <Code text="`taskkeeper asker add NAME`" />.
        </p>
      )}
      {network?.certificateSha256 && (
        <p class="help">
          Certificate SHA-256 (the asker pins it): <span class="mono">{network.certificateSha256}</span>
        </p>
      )}
      {network?.warning && (
        <p class="field-error" role="alert">
          {network.warning}
        </p>
      )}
      {(network?.error ?? error) && (
        <p class="field-error" role="alert">
          {network?.error ?? error}
        </p>
      )}
    </div>
  );
}

type AgentAction = 'connect' | 'disconnect';

function agentState(a: AgentView): string {
  if (a.connected) return a.working ? 'Connected' : 'Connected, but broken';
  return a.found ? 'Not connected' : 'Not connected (not found on this machine)';
}

/**
 * The agents Taskkeeper can connect, each with Connect or Disconnect. After either, the files
 * changed are listed; after a Connect, Undo is the Disconnect that puts them back. A binary in
 * a build directory is refused (kind `conflict`) and may be connected anyway.
 */
function Agents({ data }: { data: DataSource }) {
  const [agents, setAgents] = useState<AgentView[] | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState<{ agent: string; action: AgentAction; changes: string[] } | null>(null);
  const [refused, setRefused] = useState<{ agent: string; message: string; canForce: boolean } | null>(null);
  useEffect(() => {
    data.listAgents().then(setAgents, (err: unknown) => setLoadError(asDataError(err).message));
  }, [data]);

  const act = async (agent: string, action: AgentAction, force = false) => {
    setBusy(true);
    setRefused(null);
    setDone(null);
    try {
      const result = action === 'connect' ? await data.connectAgent(agent, force) : await data.disconnectAgent(agent);
      setAgents((list) => (list ?? []).map((a) => (a.agent === agent ? result.agent : a)));
      setDone({ agent, action, changes: result.changes });
    } catch (err) {
      const error = asDataError(err);
      setRefused({ agent, message: error.message, canForce: action === 'connect' && error.kind === 'conflict' });
    } finally {
      setBusy(false);
    }
  };

  return (
    <div class="settings agents">
      <fieldset>
        <legend>Agents</legend>
        {loadError && (
          <p class="field-error" role="alert">
            {loadError}
          </p>
        )}
        {agents === null && !loadError && <Loading />}
        {agents?.map((a) => (
          <div key={a.agent} class="field agent" data-agent={a.agent}>
            <div class="row">
              <strong>{a.name}</strong>
              <span class="agent-state" data-state={a.connected ? (a.working ? 'working' : 'broken') : 'off'}>
                {agentState(a)}
              </span>
              {a.connected ? (
                <button type="button" disabled={busy} onClick={() => void act(a.agent, 'disconnect')}>
                  Disconnect
                </button>
              ) : (
                <button type="button" class="primary" disabled={busy} onClick={() => void act(a.agent, 'connect')}>
                  Connect
                </button>
              )}
            </div>
            {a.problems.length > 0 && (
              <ul class="field-error agent-problems">
                {a.problems.map((p) => (
                  <li key={p}>{p}</li>
                ))}
              </ul>
            )}
            <p class="help">
              Connect adds Taskkeeper's hooks and MCP server to <span class="mono">{a.files.join(' and ')}</span>, keeping everything else;
              Disconnect puts back exactly what was there. The same as <Code text={`\`taskkeeper connect ${a.agent}\``} />.
            </p>
            {refused?.agent === a.agent && (
              <div class="field-error" role="alert">
                <p>{refused.message}</p>
                {refused.canForce && (
                  <button type="button" disabled={busy} onClick={() => void act(a.agent, 'connect', true)}>
                    Connect anyway
                  </button>
                )}
              </div>
            )}
            {done?.agent === a.agent && (
              <div class="outcome agent-changes" role="status">
                <p>{done.action === 'connect' ? 'Connected. Changed:' : 'Disconnected. Changed:'}</p>
                <ul>
                  {done.changes.map((c) => (
                    <li key={c} class="mono">
                      {c}
                    </li>
                  ))}
                </ul>
                {done.action === 'connect' && a.canUndo && (
                  <button type="button" disabled={busy} onClick={() => void act(a.agent, 'disconnect')}>
                    Undo
                  </button>
                )}
              </div>
            )}
          </div>
        ))}
      </fieldset>
    </div>
  );
}
