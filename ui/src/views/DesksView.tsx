// Desks and the agent sessions working at them: what each session is doing, its background
// commands, and the owner's switches for reminders (one session, or all). Sessions have no
// events of their own on the feed, so this view re-reads them every few seconds while shown,
// and on every task change.

import { useEffect, useState } from 'preact/hooks';
import { asDataError, type DataSource } from '../data';
import { useResource, useWhileVisible, valueOf } from '../hooks';
import { Code, Empty, ErrorBanner, Loading } from '../parts';
import { formatAge, formatTime, plural } from '../tasks';
import type { Activity, DeskView, SessionView, SettingsMap, TaskView } from '../types';

const SESSIONS_EVERY_MS = 5000;

interface DesksAndSessions {
  desks: DeskView[];
  sessions: SessionView[];
}

const ACTIVITY: Record<Activity, string> = {
  busy: 'busy',
  idle: 'idle',
  'waiting-on-owner': 'waiting on you',
  'stopped-by-owner': 'stopped by you',
  ended: 'ended',
};

export function DesksView({
  data,
  now,
  changeSeq,
  openTasks,
  settings,
  onSettings,
}: {
  data: DataSource;
  now: number;
  changeSeq: number;
  openTasks: TaskView[] | null;
  settings: SettingsMap | null;
  onSettings: (settings: SettingsMap) => void;
}) {
  const res = useResource(
    async (): Promise<DesksAndSessions> => {
      const [desks, sessions] = await Promise.all([data.listDesks(), data.listSessions()]);
      return { desks, sessions };
    },
    [data],
  );
  useEffect(() => {
    if (changeSeq > 0) res.refreshSoon();
  }, [changeSeq]);
  useWhileVisible(res.refresh, SESSIONS_EVERY_MS, true);

  const value = valueOf(res.load);
  const sessions = value?.sessions ?? [];
  const claude = sessions.filter((s) => s.agent === 'claude-code');
  return (
    <div class="view">
      <h2 class="visually-hidden" tabIndex={-1} data-view-heading>
        Desks and sessions
      </h2>
      <AllReminders data={data} settings={settings} onSettings={onSettings} />
      {res.load.status === 'error' && <ErrorBanner title="Can't load desks and sessions" error={res.load.error} />}
      {res.load.status === 'loading' && <Loading />}
      {value && value.desks.length === 0 && value.sessions.length === 0 && (
        <Empty title="No desks yet.">
          <p>A desk is a named place where agent sessions work: a directory and the kind of agent.</p>
          <p>
            <Code text="Add one: `taskkeeper desk add NAME --dir DIR`" />
          </p>
          <p class="note">Or connect Claude Code below: a session started in a new directory gets a desk of its own.</p>
        </Empty>
      )}
      {value &&
        desksWithSessions(value).map(({ desk, name, sessions: here }) => (
          <DeskCard
            key={name}
            data={data}
            name={name}
            desk={desk}
            sessions={here}
            open={openTasks?.filter((t) => t.desk === name).length ?? null}
            now={now}
            onChanged={res.refresh}
          />
        ))}
      <section class="connect" aria-label="connect Claude Code">
        <h3>Connect Claude Code</h3>
        <p>
          <Code text="Run `taskkeeper connect claude-code` once, then start `claude` in a desk's directory." />
        </p>
        <p class="note">
          {value === null
            ? ''
            : claude.length === 0
              ? 'No Claude Code session has reported in yet.'
              : `${plural(claude.filter((s) => s.activity !== 'ended').length, 'Claude Code session', 'Claude Code sessions')} running, ${claude.length} seen.`}
        </p>
      </section>
    </div>
  );
}

/** Every desk with its sessions (live ones first), plus any desk a session names that the list lacks. */
function desksWithSessions({ desks, sessions }: DesksAndSessions) {
  const names = new Set([...desks.map((d) => d.name), ...sessions.map((s) => s.desk)]);
  return [...names].sort().map((name) => ({
    name,
    desk: desks.find((d) => d.name === name) ?? null,
    sessions: sessions
      .filter((s) => s.desk === name)
      .sort((a, b) => Number(a.activity === 'ended') - Number(b.activity === 'ended') || b.updatedAt.localeCompare(a.updatedAt)),
  }));
}

function AllReminders({ data, settings, onSettings }: { data: DataSource; settings: SettingsMap | null; onSettings: (s: SettingsMap) => void }) {
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

function DeskCard({
  data,
  name,
  desk,
  sessions,
  open,
  now,
  onChanged,
}: {
  data: DataSource;
  name: string;
  desk: DeskView | null;
  sessions: SessionView[];
  open: number | null;
  now: number;
  onChanged: () => void;
}) {
  const live = sessions.filter((s) => s.activity !== 'ended');
  const ended = sessions.filter((s) => s.activity === 'ended');
  return (
    <section class="desk desk-card" aria-label={`desk ${name}`}>
      <h3 class="desk-name">
        {name}
        {desk && <span class="agent">{desk.agent}</span>}
        {open !== null && open > 0 && <span class="desk-count">{plural(open, 'open', 'open')}</span>}
      </h3>
      {desk && (
        <p class="dir mono" title={desk.dir}>
          {desk.dir}
        </p>
      )}
      {live.length === 0 && <p class="note">No session is working here now.</p>}
      <ul>
        {live.map((s) => (
          <SessionRow key={s.id} data={data} session={s} now={now} onChanged={onChanged} />
        ))}
      </ul>
      {ended.length > 0 && (
        <details class="ended-sessions">
          <summary>{plural(ended.length, 'ended session', 'ended sessions')}</summary>
          <ul>
            {ended.map((s) => (
              <SessionRow key={s.id} data={data} session={s} now={now} onChanged={onChanged} />
            ))}
          </ul>
        </details>
      )}
    </section>
  );
}

function SessionRow({ data, session: s, now, onChanged }: { data: DataSource; session: SessionView; now: number; onChanged: () => void }) {
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | null>(null);
  const act = async (pause: boolean) => {
    setBusy(true);
    setOutcome(null);
    try {
      await (pause ? data.pauseSession(s.id) : data.resumeSession(s.id));
      setOutcome({ ok: true, text: pause ? "This session's reminders are paused." : "This session's reminders are on." });
      onChanged();
    } catch (err) {
      setOutcome({ ok: false, text: asDataError(err).message });
    } finally {
      setBusy(false);
    }
  };
  const rateLimited = s.rateLimitedUntil !== null && Date.parse(s.rateLimitedUntil) > now;
  return (
    <li class={`session activity-${s.activity}`} data-session-id={s.id}>
      <p class="meta">
        <span class={`badge badge-${s.activity}`}>{ACTIVITY[s.activity] ?? s.activity}</span>
        <span title={`since ${s.since}`}>for {formatAge(s.since, now) || 'a moment'}</span>
        {s.agent !== 'claude-code' && <span>{s.agent}</span>}
        {s.tmuxPane && <span class="mono">tmux {s.tmuxPane}</span>}
        {s.pid !== null && <span class="mono">pid {s.pid}</span>}
        {s.remindersPaused && <span class="badge badge-paused">reminders paused</span>}
      </p>
      {rateLimited && s.rateLimitedUntil && (
        <p class="note">Rate-limited until {formatTime(s.rateLimitedUntil, now)}; no reminders until then.</p>
      )}
      {s.lastWords && <p class="last-words">{s.lastWords}</p>}
      {s.background.length > 0 && (
        <div class="background">
          <span class="note">{plural(s.background.length, 'background command', 'background commands')}:</span>
          <ul>
            {s.background.map((cmd, i) => (
              <li key={i}>
                <code>{cmd}</code>
              </li>
            ))}
          </ul>
        </div>
      )}
      {s.activity !== 'ended' && (
        <div class="row">
          {s.remindersPaused !== true && (
            <button type="button" disabled={busy} onClick={() => act(true)}>
              Pause reminders
            </button>
          )}
          {s.remindersPaused !== false && (
            <button type="button" disabled={busy} onClick={() => act(false)}>
              Resume reminders
            </button>
          )}
        </div>
      )}
      {outcome && (
        <p class={outcome.ok ? 'outcome' : 'outcome is-error'} role={outcome.ok ? 'status' : 'alert'}>
          {outcome.text}
        </p>
      )}
    </li>
  );
}
