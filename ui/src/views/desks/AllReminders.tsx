// The switch for every session's reminders at once (the `reminders.paused` setting).

import { useState } from 'preact/hooks';
import { asDataError, type DataSource } from '../../data';
import type { SettingsMap } from '../../types';

export function AllReminders({ data, settings, onSettings }: { data: DataSource; settings: SettingsMap | null; onSettings: (s: SettingsMap) => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  if (!settings) return null;
  const paused = settings['reminders.paused'] === 'true';
  const toggle = async () => {
    setBusy(true);
    setError(null);
    try {
      onSettings(await (paused ? data.resumeReminders() : data.pauseReminders()));
    } catch (err) {
      setError(asDataError(err).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class={paused ? 'all-reminders is-paused' : 'all-reminders'} aria-label="all reminders">
      <p>{paused ? 'All reminders are paused.' : 'Reminders are on for every session.'}</p>
      <button type="button" disabled={busy} onClick={toggle}>
        {paused ? 'Resume all' : 'Pause all'}
      </button>
      {error && (
        <p class="outcome is-error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}
