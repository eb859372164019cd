// Desks and the agent sessions working at them: what each session is doing, its background
// commands, and the owner's switches for reminders (one session, or all). A claude-code desk
// can get a headless session the daemon launches (and the owner can stop, and whose permission
// requests the owner allows or denies here); every desk shows
// its delivery command, which the owner sets or clears here. The live feed's session hint
// (`sessions`) makes this view re-read them at once (so a permission request shows within a
// moment), as does every task change; a slow poll while shown is the fallback, a fast one
// while the feed is down.

import { useEffect, useRef, useState } from 'preact/hooks';
import { asDataError, type DataSource } from '../data';
import { checkDeliverCommand, deliverCommandOf, isLongInput, permissionAsk } from '../desks';
import { useResource, useWhileVisible, valueOf } from '../hooks';
import { Code, Empty, ErrorBanner, Loading } from '../parts';
import { formatAge, formatTime, plural } from '../tasks';
import type { Activity, DeskView, PermissionView, SessionView, SettingsMap, TaskView } from '../types';

/** The fallback re-read while the live feed is up (its session hint does the real work)... */
const SESSIONS_EVERY_MS = 30_000;
/** ...and while it is not (connecting, reconnecting, failed). */
const SESSIONS_OFFLINE_EVERY_MS = 5000;

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
  sessionSeq,
  live,
  openTasks,
  settings,
  onSettings,
}: {
  data: DataSource;
  now: number;
  changeSeq: number;
  /** Bumped by the feed's session hint. */
  sessionSeq: number;
  /** Whether the live feed is up (then the poll can be slow). */
  live: boolean;
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
  // The hint is already coalesced by its sender, and a re-read while one runs collapses into one.
  useEffect(() => {
    if (sessionSeq > 0) res.refresh();
  }, [sessionSeq]);
  useWhileVisible(res.refresh, live ? SESSIONS_EVERY_MS : SESSIONS_OFFLINE_EVERY_MS, true);

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
          <Code text="Connect Claude Code once (Settings, or `taskkeeper connect claude-code`), then start `claude` in a desk's directory." />
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
      {desk?.needsSession && (
        <p class="callout needs-session" data-needs-session={desk.name}>
          <strong>Work waits, no session.</strong> This desk has {plural(desk.openTasks ?? 0, 'open task', 'open tasks')}{' '}
          and no live session: nothing moves until one starts.
          {desk.agent === 'claude-code' ? ' Launch a headless one below, or start Claude Code in its directory.' : ' Start its agent in its directory.'}
        </p>
      )}
      {desk && <DeliverCommand data={data} desk={desk} onChanged={onChanged} />}
      {desk?.agent === 'claude-code' && <Launch data={data} desk={desk.name} onChanged={onChanged} />}
      {desk?.agent === 'claude-code' && <AutoLaunch data={data} desk={desk} now={now} onChanged={onChanged} />}
      {live.length === 0 && !desk?.needsSession && <p class="note">No session is working here now.</p>}
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

interface Outcome {
  ok: boolean;
  text: string;
}

function OutcomeLine({ outcome }: { outcome: Outcome | null }) {
  if (!outcome) return null;
  return (
    <p class={outcome.ok ? 'outcome' : 'outcome is-error'} role={outcome.ok ? 'status' : 'alert'}>
      <Code text={outcome.text} />
    </p>
  );
}

/** One owner action at a time, with its outcome: `run(call, done)` shows `done` or the error. */
function useAction(onChanged: () => void) {
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const run = async (call: () => Promise<unknown>, done: string): Promise<boolean> => {
    setBusy(true);
    setOutcome(null);
    try {
      await call();
      setOutcome({ ok: true, text: done });
      onChanged();
      return true;
    } catch (err) {
      setOutcome({ ok: false, text: asDataError(err).message });
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { busy, outcome, setOutcome, run };
}

/** The desk's delivery command, and a small form to set or clear it. */
function DeliverCommand({ data, desk, onChanged }: { data: DataSource; desk: DeskView; onChanged: () => void }) {
  const current = desk.deliverCommand ?? null;
  const { busy, outcome, setOutcome, run } = useAction(onChanged);
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const input = useRef<HTMLTextAreaElement>(null);
  const id = `deliver-${desk.name.replace(/[^a-z0-9-]/gi, '-')}`;

  useEffect(() => {
    if (editing) input.current?.focus();
  }, [editing]);

  const open = () => {
    setDraft(current ?? '');
    setProblem(null);
    setOutcome(null);
    setEditing(true);
  };
  const save = async (text: string) => {
    const found = checkDeliverCommand(text);
    setProblem(found);
    if (found) return input.current?.focus();
    const command = deliverCommandOf(text);
    const ok = await run(
      () => data.setDeliverCommand(desk.name, command),
      command === null ? 'This desk has no delivery command now.' : 'Delivery command saved.',
    );
    if (ok) setEditing(false);
  };

  return (
    <div class="deliver" data-deliver-command={desk.name}>
      <p class="deliver-line">
        <span class="note">Delivery command:</span>{' '}
        {current === null ? <span class="note">none</span> : <code class="deliver-command">{current}</code>}
        {!editing && (
          <button type="button" class="link" onClick={open}>
            {current === null ? 'Set…' : 'Edit…'}
          </button>
        )}
      </p>
      {editing && (
        <form
          class="edit"
          noValidate
          onSubmit={(e) => {
            e.preventDefault();
            void save(draft);
          }}
          onKeyDown={(e) => {
            if (e.key === 'Escape') {
              e.stopPropagation();
              setEditing(false);
            } else if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && e.target === input.current) {
              // One line: Enter saves, as in a text field.
              e.preventDefault();
              void save(draft);
            }
          }}
        >
          <label for={id}>Delivery command for {desk.name}</label>
          <textarea
            id={id}
            ref={input}
            class="mono"
            rows={2}
            spellcheck={false}
            autoComplete="off"
            placeholder="none"
            value={draft}
            aria-invalid={problem ? 'true' : undefined}
            aria-describedby={`${id}-help${problem ? ` ${id}-error` : ''}`}
            onInput={(e) => {
              setDraft(e.currentTarget.value);
              setProblem(checkDeliverCommand(e.currentTarget.value));
            }}
          />
          <p class="help" id={`${id}-help`}>
            <Code text="Run with `sh -c` in the desk's directory, the text on its stdin, when there is no better way into the session (agents without hooks); exit status 0 means delivered. One line; empty for none." />
          </p>
          {problem && (
            <p class="field-error" id={`${id}-error`} role="alert">
              {problem}
            </p>
          )}
          <div class="row">
            <button type="submit" class="primary" disabled={busy}>
              {busy ? 'Saving…' : 'Save'}
            </button>
            {current !== null && (
              <button type="button" disabled={busy} onClick={() => void save('')}>
                Remove
              </button>
            )}
            <button type="button" disabled={busy} onClick={() => setEditing(false)}>
              Cancel
            </button>
          </div>
        </form>
      )}
      <OutcomeLine outcome={outcome} />
    </div>
  );
}

/** Launch a headless Claude Code session at this desk (`claude -p`, owned by the daemon). */
function Launch({ data, desk, onChanged }: { data: DataSource; desk: string; onChanged: () => void }) {
  const { busy, outcome, run } = useAction(onChanged);
  return (
    <div class="launch">
      <button
        type="button"
        disabled={busy}
        title="Start Claude Code without a terminal; Taskkeeper hands it this desk's tasks on its stdin"
        onClick={() => void run(() => data.launchSession(desk), 'Launched a headless session; it appears below.')}
      >
        {busy ? 'Launching…' : 'Launch headless session'}
      </button>
      <OutcomeLine outcome={outcome} />
    </div>
  );
}

/** Whether the desk launches a headless session by itself when it has work and none is live. */
function AutoLaunch({ data, desk, now, onChanged }: { data: DataSource; desk: DeskView; now: number; onChanged: () => void }) {
  const { busy, outcome, run } = useAction(onChanged);
  const on = desk.autoLaunch === true;
  return (
    <div class="auto-launch">
      <label>
        <input
          type="checkbox"
          checked={on}
          disabled={busy}
          data-auto-launch={desk.name}
          onChange={(e) => {
            const next = e.currentTarget.checked;
            void run(
              () => data.setAutoLaunch(desk.name, next),
              next
                ? 'This desk now launches a headless session by itself when it has work and no live session.'
                : 'This desk launches only when you do.',
            );
          }}
        />{' '}
        Launch a session by itself when work waits (also after a restart)
      </label>
      {on && desk.autoLaunchGaveUp && (
        <p class="note is-warning">
          Gave up after several launches that did not move the work. Launch once yourself to try again.
        </p>
      )}
      {on && !desk.autoLaunchGaveUp && desk.autoLaunchRetryAt && (
        <p class="note">The last launch did not last; the next try is at {formatTime(desk.autoLaunchRetryAt, now)}.</p>
      )}
      <OutcomeLine outcome={outcome} />
    </div>
  );
}

function SessionRow({ data, session: s, now, onChanged }: { data: DataSource; session: SessionView; now: number; onChanged: () => void }) {
  const { busy, outcome, run } = useAction(onChanged);
  const act = (pause: boolean) =>
    run(
      () => (pause ? data.pauseSession(s.id) : data.resumeSession(s.id)),
      pause ? "This session's reminders are paused." : "This session's reminders are on.",
    );
  const stop = () => run(() => data.stopSession(s.id), 'Stopping: it finishes what it is writing, then ends.');
  const answer = (allow: boolean, message?: string) =>
    run(
      () => data.answerPermission(s.id, allow, message, s.permission?.requestId),
      allow ? 'Allowed; the session goes on.' : 'Denied; the session was told.',
    );
  const rateLimited = s.rateLimitedUntil !== null && Date.parse(s.rateLimitedUntil) > now;
  return (
    <li class={`session activity-${s.activity}`} data-session-id={s.id}>
      <p class="meta">
        <span class={`badge badge-${s.activity}`}>{ACTIVITY[s.activity] ?? s.activity}</span>
        <span title={`since ${s.since}`}>for {formatAge(s.since, now) || 'a moment'}</span>
        {s.agent !== 'claude-code' && <span>{s.agent}</span>}
        {s.tmuxPane && <span class="mono">tmux {s.tmuxPane}</span>}
        {s.pid !== null && <span class="mono">pid {s.pid}</span>}
        {s.headless && (
          <span class="badge badge-headless" title="Launched by Taskkeeper without a terminal; it reads its tasks on stdin">
            headless
          </span>
        )}
        {s.remindersPaused && <span class="badge badge-paused">reminders paused</span>}
      </p>
      {rateLimited && s.rateLimitedUntil && (
        <p class="note">Rate-limited until {formatTime(s.rateLimitedUntil, now)}; no reminders until then.</p>
      )}
      {s.permission && s.activity !== 'ended' && (
        <PermissionAsk key={s.permission.requestId} id={s.id} request={s.permission} busy={busy} onAnswer={answer} />
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
          {s.headless && (
            <button type="button" class="danger" disabled={busy} onClick={stop} title="Stop this headless session">
              Stop
            </button>
          )}
        </div>
      )}
      <OutcomeLine outcome={outcome} />
    </li>
  );
}

/**
 * What a headless session asks to use, with the owner's answer: Allow, Deny, or Deny with a
 * message the model reads. The input is JSON text; a long one starts folded.
 */
function PermissionAsk({
  id,
  request: p,
  busy,
  onAnswer,
}: {
  id: string;
  request: PermissionView;
  busy: boolean;
  onAnswer: (allow: boolean, message?: string) => Promise<boolean>;
}) {
  const [denying, setDenying] = useState(false);
  const [message, setMessage] = useState('');
  const field = useRef<HTMLInputElement>(null);
  const denyButton = useRef<HTMLButtonElement>(null);
  const fieldId = `deny-${id.replace(/[^a-z0-9-]/gi, '-')}`;
  const opened = useRef(false);
  useEffect(() => {
    // Focus follows the form: into its field when it opens, back to its button when it closes.
    if (denying) field.current?.focus();
    else if (opened.current) denyButton.current?.focus();
    opened.current = denying;
  }, [denying]);
  const close = () => setDenying(false);
  const input = <pre class="permission-input mono">{p.input}</pre>;
  return (
    <section class="permission" aria-label="permission request" data-permission-request={p.requestId}>
      <p class="permission-ask">
        <span class="badge badge-waiting-on-owner">asks</span> {permissionAsk(p.tool, p.description)}
      </p>
      {isLongInput(p.input) ? (
        <details class="permission-more">
          <summary>input ({plural(p.input.length, 'character', 'characters')})</summary>
          {input}
        </details>
      ) : (
        input
      )}
      {denying ? (
        <form
          class="edit"
          noValidate
          onSubmit={(e) => {
            e.preventDefault();
            void onAnswer(false, message).then((ok) => ok || field.current?.focus());
          }}
          onKeyDown={(e) => {
            if (e.key === 'Escape') {
              e.stopPropagation();
              close();
            }
          }}
        >
          <label for={fieldId}>Why not (optional; the session reads it)</label>
          <input
            id={fieldId}
            ref={field}
            type="text"
            autoComplete="off"
            value={message}
            onInput={(e) => setMessage(e.currentTarget.value)}
          />
          <div class="row">
            <button type="submit" class="danger" disabled={busy}>
              Deny
            </button>
            <button type="button" disabled={busy} onClick={close}>
              Cancel
            </button>
          </div>
        </form>
      ) : (
        <div class="row">
          <button type="button" class="primary" disabled={busy} onClick={() => void onAnswer(true)}>
            Allow
          </button>
          <button type="button" class="danger" disabled={busy} onClick={() => void onAnswer(false)}>
            Deny
          </button>
          <button type="button" class="link" ref={denyButton} disabled={busy} onClick={() => setDenying(true)}>
            Deny with a message…
          </button>
        </div>
      )}
    </section>
  );
}
