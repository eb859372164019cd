// One session at a desk: what it is doing, its background commands, its reminder switch, why a
// delivery to it did not go through, and, for a headless session, the stop button and the tool
// it asks the owner to allow.

import { useEffect, useRef, useState } from 'preact/hooks';
import type { DataSource } from '../../data';
import { isLongInput, permissionAsk } from '../../desks';
import { formatAge, formatTime, plural } from '../../tasks';
import type { Activity, PermissionView, SessionView } from '../../types';
import { OutcomeLine, useAction } from './action';

const ACTIVITY: Record<Activity, string> = {
  busy: 'busy',
  idle: 'idle',
  'waiting-on-owner': 'waiting on you',
  'stopped-by-owner': 'stopped by you',
  ended: 'ended',
};

export function SessionRow({ data, session: s, now, onChanged }: { data: DataSource; session: SessionView; now: number; onChanged: () => void }) {
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
  const wakesItself = s.wakesAt !== null && Date.parse(s.wakesAt) > now;
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
      {wakesItself && s.wakesAt && (
        <p class="note">It wakes itself at {formatTime(s.wakesAt, now)} (a schedule of its own); no reminders until then.</p>
      )}
      {s.deliveryProblem && s.activity !== 'ended' && (
        <p class="note is-warning" data-delivery-problem>
          Not delivered by {s.deliveryProblem.method} at {formatTime(s.deliveryProblem.at, now)}: {s.deliveryProblem.why}
        </p>
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
