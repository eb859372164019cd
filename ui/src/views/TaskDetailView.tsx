// One task: its request, history, artifacts and reminders, and what the owner can do about
// it (remind now, resume after a stall, cancel). Every action goes through the data layer and
// the owner service; the view re-reads the task after each, and on every live change.

import { useEffect, useRef, useState } from 'preact/hooks';
import { asDataError, type DataError, type DataSource } from '../data';
import { useResource, valueOf } from '../hooks';
import { Code, ErrorBanner, Loading, StateBadges } from '../parts';
import { routeHref } from '../route';
import { firstLine, formatAgo, formatTime, isOpen, plural } from '../tasks';
import type { TaskDetail } from '../types';
import { TimelineSection } from '../Timeline';

type Action = 'remind' | 'resume' | 'cancel';

interface Outcome {
  ok: boolean;
  text: string;
}

export function TaskDetailView({
  data,
  id,
  now,
  changeSeq,
  onBack,
  backLabel,
}: {
  data: DataSource;
  id: string;
  now: number;
  changeSeq: number;
  onBack: () => void;
  backLabel: string;
}) {
  const task = useResource(() => data.getTask(id), [data, id]);
  const [busy, setBusy] = useState<Action | null>(null);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const [confirming, setConfirming] = useState(false);
  const [reason, setReason] = useState('');
  const reasonRef = useRef<HTMLInputElement>(null);

  useEffect(() => {
    if (changeSeq > 0) task.refreshSoon();
  }, [changeSeq]);
  useEffect(() => {
    if (confirming) reasonRef.current?.focus();
  }, [confirming]);

  const run = async (action: Action, call: () => Promise<unknown>, done: string) => {
    setBusy(action);
    setOutcome(null);
    try {
      await call();
      setOutcome({ ok: true, text: done });
      setConfirming(false);
      setReason('');
    } catch (err) {
      setOutcome({ ok: false, text: asDataError(err).message });
    } finally {
      setBusy(null);
      task.refresh();
    }
  };

  const t = valueOf(task.load);
  // Once the task has loaded, keyboard and screen-reader users start at its title.
  const focused = useRef(false);
  useEffect(() => {
    if (t && !focused.current) {
      focused.current = true;
      document.querySelector<HTMLElement>('.detail [data-view-heading]')?.focus();
    }
  }, [t]);
  const heading = (
    <div class="detail-top">
      <button type="button" class="back" onClick={onBack}>
        ← {backLabel}
      </button>
    </div>
  );
  if (!t) {
    return (
      <div class="view detail">
        {heading}
        {task.load.status === 'error' ? (
          <ErrorBanner title="Can't load this task" error={task.load.error as DataError} />
        ) : (
          <Loading />
        )}
      </div>
    );
  }

  const open = isOpen(t);
  return (
    <div class="view detail">
      {heading}
      {task.load.status === 'error' && <ErrorBanner title="Can't refresh this task" error={task.load.error} />}
      <header class="detail-head">
        <p class="meta">
          <StateBadges task={t} />
          <span class="desk-label">{t.desk}</span>
          <span class="asker">from {t.asker}</span>
        </p>
        <h2 tabIndex={-1} data-view-heading class="request-title">
          {firstLine(t.request) || '(empty request)'}
        </h2>
      </header>

      {t.statusText && <p class="status-text detail-status">{t.statusText}</p>}
      {open && t.waitingOnOwner && (
        <p class="callout">
          The desk's session is waiting for your answer to a permission prompt: in its terminal, or for a headless
          session in <a href={routeHref({ view: 'tab', tab: 'desks' })}>Desks</a>.
        </p>
      )}
      {open && t.stalledAt && (
        <p class="callout is-stalled">
          Stalled {formatAgo(t.stalledAt, now)}: the session did not answer its reminders. Look at it, then resume the
          reminders or cancel the task.
        </p>
      )}

      {open && (
        <section class="actions" aria-label="actions">
          <button
            type="button"
            disabled={busy !== null || t.state !== 'working'}
            title={t.state === 'working' ? 'Remind the session holding this task now' : 'Only a working task can be reminded'}
            onClick={() => run('remind', () => data.remindTask(t.id), 'Reminder sent to the session.')}
          >
            {busy === 'remind' ? 'Reminding…' : 'Remind now'}
          </button>
          {t.stalledAt && (
            <button
              type="button"
              disabled={busy !== null}
              onClick={() => run('resume', () => data.resumeTask(t.id), 'Reminders start again.')}
            >
              {busy === 'resume' ? 'Resuming…' : 'Resume reminders'}
            </button>
          )}
          {!confirming && (
            <button type="button" class="danger" disabled={busy !== null} onClick={() => setConfirming(true)}>
              Cancel task…
            </button>
          )}
        </section>
      )}
      {open && confirming && (
        <form
          class="confirm"
          onSubmit={(e) => {
            e.preventDefault();
            const why = reason.trim();
            void run('cancel', () => data.cancelTask(t.id, why === '' ? null : why), 'Canceled; the asker is told.');
          }}
          onKeyDown={(e) => {
            if (e.key === 'Escape') {
              // Escape closes this question first, not the whole task view.
              e.stopPropagation();
              setConfirming(false);
            }
          }}
        >
          <label for="cancel-reason">Cancel this task? The asker is told, with your reason if you give one.</label>
          <input
            id="cancel-reason"
            ref={reasonRef}
            type="text"
            placeholder="Reason (optional)"
            value={reason}
            onInput={(e) => setReason(e.currentTarget.value)}
          />
          <div class="row">
            <button type="submit" class="danger" disabled={busy !== null}>
              {busy === 'cancel' ? 'Canceling…' : 'Cancel task'}
            </button>
            <button type="button" onClick={() => setConfirming(false)}>
              Keep it
            </button>
          </div>
        </form>
      )}
      {outcome && (
        <p class={outcome.ok ? 'outcome' : 'outcome is-error'} role={outcome.ok ? 'status' : 'alert'}>
          <Code text={outcome.text} />
        </p>
      )}

      {t.timeline && <TimelineSection timeline={t.timeline} now={now} />}

      <Facts task={t} now={now} />

      <section class="history" aria-label="history">
        <h3>History</h3>
        {t.history.length === 0 ? (
          <p class="note">No messages yet.</p>
        ) : (
          <ol>
            {t.history.map((m) => (
              <li key={m.messageId} class={`message from-${m.from}`}>
                <span class="from">{m.from === 'asker' ? t.asker : 'worker'}</span>
                <p>{m.text}</p>
              </li>
            ))}
          </ol>
        )}
      </section>

      {t.artifacts.length > 0 && (
        <section class="artifacts" aria-label="artifacts">
          <h3>Artifacts</h3>
          {t.artifacts.map((a) => (
            <article key={a.artifactId} class="artifact">
              <h4>{a.name ?? a.artifactId}</h4>
              <pre>{a.text}</pre>
            </article>
          ))}
        </section>
      )}
    </div>
  );
}

/** Times and counts, as a definition list; only those that happened are shown. */
function Facts({ task: t, now }: { task: TaskDetail; now: number }) {
  const at = (iso: string) => (
    <time dateTime={iso} title={iso}>
      {formatTime(iso, now)} ({formatAgo(iso, now)})
    </time>
  );
  return (
    <dl class="facts">
      <dt>Created</dt>
      <dd>{at(t.createdAt)}</dd>
      {isOpen(t) && (
        <>
          <dt>Delivered</dt>
          <dd>{t.deliveredAt ? at(t.deliveredAt) : 'not yet handed to a session'}</dd>
        </>
      )}
      <dt>Reminders</dt>
      <dd>
        {t.remindersSent === 0 ? 'none sent' : plural(t.remindersSent, 'sent', 'sent')}
        {t.lastReminderAt && <>, the last at {at(t.lastReminderAt)}</>}
      </dd>
      {t.lastWords && (
        <>
          <dt>Last words</dt>
          <dd class="last-words-full">{t.lastWords}</dd>
        </>
      )}
      {t.stalledAt && (
        <>
          <dt>Stalled</dt>
          <dd>{at(t.stalledAt)}</dd>
        </>
      )}
      {t.expiredAt && (
        <>
          <dt>Expired</dt>
          <dd>{at(t.expiredAt)}</dd>
        </>
      )}
      {!isOpen(t) && (
        <>
          <dt>Ended</dt>
          <dd>{at(t.updatedAt)}</dd>
          <dt>Acknowledged</dt>
          <dd>{t.acknowledgedAt ? at(t.acknowledgedAt) : 'not yet by the asker'}</dd>
        </>
      )}
      <dt>Task id</dt>
      <dd class="mono">{t.id}</dd>
    </dl>
  );
}
