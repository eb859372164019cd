// Pieces the views share: task rows, badges, error and empty states.

import type { ComponentChildren } from 'preact';
import type { DataError } from './data';
import { routeHref } from './route';
import { firstLine, formatAge, formatAgo, plural } from './tasks';
import type { TaskView } from './types';
import { Timeline } from './Timeline';

/**
 * The words for a task's state, as a badge: the daemon's label (`core::Task::label`, the same
 * words the CLI and the digest show), styled by its kind. Nothing here derives a state's word.
 */
export function StateBadges({ task }: { task: TaskView }) {
  return <span class={`badge badge-${task.labelKind}`}>{task.label}</span>;
}

/** One task in a list; the whole row is a link, so Tab reaches it and Enter opens it. */
export function TaskRow({ task, now, ended = false }: { task: TaskView; now: number; ended?: boolean }) {
  const title = firstLine(task.request) || '(empty request)';
  return (
    <li
      class={`task state-${task.state}${task.stalledAt && !ended ? ' is-stalled' : ''}`}
      data-task-id={task.id}
    >
      <a class="task-link" href={routeHref({ view: 'task', id: task.id })} data-task-link={task.id}>
        <span class="meta">
          <StateBadges task={task} />
          {ended && <span class="desk-label">{task.desk}</span>}
          <span class="asker" title={`asked by ${task.asker}`}>
            from {task.asker}
          </span>
          {ended ? (
            <span class="age" title={`ended ${task.updatedAt}`}>
              {formatAgo(task.updatedAt, now)}
            </span>
          ) : (
            <span class="age" title={`created ${task.createdAt}`}>
              {formatAge(task.createdAt, now)}
            </span>
          )}
          {ended && (
            <span class={task.acknowledgedAt ? 'ack is-acked' : 'ack'}>
              {task.acknowledgedAt ? 'acknowledged' : 'not acknowledged'}
            </span>
          )}
        </span>
        <span class="request">{title}</span>
        {!ended && task.timeline && task.timeline.hold !== 'queued' && (
          <span class="row-timeline">
            <Timeline timeline={task.timeline} now={now} compact />
          </span>
        )}
        {!ended && task.state === 'working' && task.deliveredAt === null && (
          <span class="undelivered">No session has been handed this task yet.</span>
        )}
        {task.statusText && <span class="status-text">{task.statusText}</span>}
        {!ended && task.lastWords && (
          <span class="last-words" title="the worker's last words">
            {task.lastWords}
          </span>
        )}
        {!ended && task.remindersSent > 0 && (
          <span class="reminders">
            {plural(task.remindersSent, 'reminder', 'reminders')} sent
            {task.lastReminderAt && `, the last ${formatAgo(task.lastReminderAt, now)}`}
          </span>
        )}
      </a>
    </li>
  );
}

export function ErrorBanner({ title, error, note }: { title: string; error: DataError; note?: string | undefined }) {
  return (
    <section class="error" role="alert">
      <h2>{title}</h2>
      <p>
        <Code text={error.message} />
      </p>
      {note && <p class="note">{note}</p>}
    </section>
  );
}

/** Shows `text` with its `backticked` parts as code: how the daemon and this UI name commands. */
export function Code({ text }: { text: string }) {
  const parts = text.split('`');
  return <>{parts.map((part, i) => (i % 2 === 1 ? <code key={i}>{part}</code> : part))}</>;
}

export function Empty({ title, children }: { title: string; children: ComponentChildren }) {
  return (
    <section class="empty">
      <h2>{title}</h2>
      {children}
    </section>
  );
}

export function Loading() {
  return <p class="note loading">Loading…</p>;
}
