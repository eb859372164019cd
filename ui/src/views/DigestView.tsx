// The digest: what stalled, what finished, what waits on the owner, acknowledgements still
// pending and reminders sent since the owner last took one. Opening it only shows it; "Done"
// takes it (the next starts from now). What it holds is the daemon's (`core::digest`).

import { useEffect, useState } from 'preact/hooks';
import { asDataError, type DataSource } from '../data';
import { useResource, valueOf } from '../hooks';
import { Code, ErrorBanner, Loading, TaskRow } from '../parts';
import { routeHref } from '../route';
import { firstLine, formatTime, plural } from '../tasks';
import type { DigestCounts, TaskView } from '../types';

/** "2 stalled, 3 finished, 1 waiting on you, 4 not acknowledged, 6 reminders", the zeros left out. */
export function digestCounts(c: DigestCounts): string {
  const parts = [
    c.stalled > 0 ? `${c.stalled} stalled` : '',
    c.finished > 0 ? `${c.finished} finished` : '',
    c.waitingOnOwner > 0 ? `${c.waitingOnOwner} waiting on you` : '',
    c.ackPending > 0 ? `${c.ackPending} not acknowledged` : '',
    c.reminders > 0 ? plural(c.reminders, 'reminder', 'reminders') : '',
  ].filter((p) => p !== '');
  return parts.length === 0 ? 'nothing new' : parts.join(', ');
}

function Part({ title, tasks, now, ended, id }: { title: string; tasks: TaskView[]; now: number; ended: boolean; id: string }) {
  return (
    <section class="digest-part" aria-label={title} data-digest-part={id}>
      <h3>
        {title} <span class="desk-count">{tasks.length}</span>
      </h3>
      {tasks.length === 0 ? (
        <p class="note">None.</p>
      ) : (
        <ul>
          {tasks.map((t) => (
            <TaskRow key={t.id} task={t} now={now} ended={ended} />
          ))}
        </ul>
      )}
    </section>
  );
}

export function DigestView({ data, now, changeSeq }: { data: DataSource; now: number; changeSeq: number }) {
  const digest = useResource(() => data.getDigest(), [data]);
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | null>(null);
  useEffect(() => {
    if (changeSeq > 0) digest.refreshSoon();
  }, [changeSeq]);
  const d = valueOf(digest.load);
  const take = async () => {
    setBusy(true);
    setOutcome(null);
    try {
      await data.takeDigest();
      setOutcome({ ok: true, text: 'Done: the next digest starts from now.' });
    } catch (err) {
      setOutcome({ ok: false, text: asDataError(err).message });
    } finally {
      setBusy(false);
      digest.refresh();
    }
  };
  return (
    <div class="view digest">
      <h2 tabIndex={-1} data-view-heading class="view-title">
        Digest
      </h2>
      {digest.load.status === 'error' && <ErrorBanner title="Can't load the digest" error={digest.load.error} />}
      {digest.load.status === 'loading' && <Loading />}
      {d && (
        <>
          <p class="digest-since" data-digest-counts={JSON.stringify(d.counts)}>
            {d.since ? <>Since {formatTime(d.since, now)}: </> : <>Since the beginning: </>}
            <strong>{digestCounts(d.counts)}</strong>.
          </p>
          <div class="row">
            <button type="button" disabled={busy} onClick={() => void take()}>
              {busy ? 'Marking…' : 'Done: start the next digest from now'}
            </button>
          </div>
          {outcome && (
            <p class={outcome.ok ? 'outcome' : 'outcome is-error'} role={outcome.ok ? 'status' : 'alert'}>
              <Code text={outcome.text} />
            </p>
          )}
          <Part id="stalled" title="Stalled" tasks={d.stalled} now={now} ended={false} />
          <Part id="waiting" title="Waiting on you" tasks={d.waitingOnOwner} now={now} ended={false} />
          <Part id="finished" title="Finished" tasks={d.finished} now={now} ended />
          <Part id="ack" title="Not acknowledged by their askers" tasks={d.ackPending} now={now} ended />
          <section class="digest-part" aria-label="Reminders sent" data-digest-part="reminders">
            <h3>
              Reminders sent <span class="desk-count">{d.reminders.length}</span>
            </h3>
            {d.reminders.length === 0 ? (
              <p class="note">None.</p>
            ) : (
              <ol class="digest-reminders">
                {d.reminders.map((r, i) => (
                  <li key={i}>
                    <time dateTime={r.at}>{formatTime(r.at, now)}</time> <span class="desk-label">{r.desk}</span>{' '}
                    <a href={routeHref({ view: 'task', id: r.task })}>{firstLine(r.request) || r.task}</a>
                  </li>
                ))}
              </ol>
            )}
          </section>
        </>
      )}
    </div>
  );
}
