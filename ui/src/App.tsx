// The window: open tasks grouped by desk. It re-fetches every few seconds for now; a later
// issue replaces the timer with the owner event stream (`tasks-changed`).

import { useEffect, useRef, useState } from 'preact/hooks';
import { DataError, type DataSource } from './data';
import { countTasks, firstLine, formatAge, formatAgo, groupByDesk, plural, stateLabel, type DeskGroup } from './tasks';
import type { TaskView } from './types';

const REFRESH_MS = 3000;

type Load =
  | { status: 'loading' }
  | { status: 'ready'; tasks: TaskView[]; at: number }
  | { status: 'error'; error: DataError; tasks: TaskView[] | null };

export function App({ data }: { data: DataSource }) {
  const [load, setLoad] = useState<Load>({ status: 'loading' });
  const listRef = useRef<HTMLElement>(null);
  const reported = useRef<number | null>(null);

  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let stopped = false;
    const refresh = async () => {
      clearTimeout(timer);
      try {
        const tasks = await data.listOpenTasks();
        if (!stopped) setLoad({ status: 'ready', tasks, at: Date.now() });
      } catch (err) {
        const error = err instanceof DataError ? err : new DataError('unknown', String(err));
        // Keep the last good list on screen under the error: a hiccup shouldn't blank the window.
        if (!stopped) setLoad((prev) => ({ status: 'error', error, tasks: prev.status === 'loading' ? null : prev.tasks }));
      }
      // Chained timeouts, not an interval: a slow answer never stacks requests. A hidden
      // window (the app in the tray) doesn't poll; showing it again fetches at once.
      if (!stopped && document.visibilityState !== 'hidden') timer = setTimeout(refresh, REFRESH_MS);
    };
    const onVisible = () => {
      if (document.visibilityState === 'visible') void refresh();
    };
    void refresh();
    document.addEventListener('visibilitychange', onVisible);
    return () => {
      stopped = true;
      clearTimeout(timer);
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, [data]);

  // Count what actually reached the DOM, not what was fetched, so the report proves rendering.
  useEffect(() => {
    if (load.status !== 'ready') return;
    const count = listRef.current?.querySelectorAll('[data-task-id]').length ?? 0;
    if (reported.current === count) return;
    reported.current = count;
    data.reportRendered(count).catch((err: unknown) => console.warn('ui_rendered failed', err));
  }, [load, data]);

  const tasks = load.status === 'loading' ? null : load.tasks;
  const counts = tasks ? countTasks(tasks) : null;

  return (
    <div class="app">
      <header class="top">
        <h1>Taskkeeper</h1>
        {counts && (
          <p class="summary" aria-live="polite">
            {plural(counts.open, 'open task', 'open tasks')}
            {counts.stalled > 0 && <span class="stalled-count"> · {counts.stalled} stalled</span>}
          </p>
        )}
      </header>
      {load.status === 'error' && <ErrorBanner error={load.error} />}
      <main ref={listRef} class="content">
        {load.status === 'loading' && <p class="note">Loading…</p>}
        {tasks && tasks.length === 0 && load.status === 'ready' && <EmptyState />}
        {tasks && tasks.length > 0 && <TaskList groups={groupByDesk(tasks)} now={Date.now()} />}
      </main>
    </div>
  );
}

function EmptyState() {
  return (
    <section class="empty">
      <h2>No open tasks.</h2>
      <p>
        Give a desk a task: <code>taskkeeper task add DESK "..."</code>
      </p>
      <p class="note">Tasks that agents send to your desks show up here until the worker finishes them.</p>
    </section>
  );
}

function ErrorBanner({ error }: { error: DataError }) {
  return (
    <section class="error" role="alert">
      <h2>Can't load tasks</h2>
      <p>{error.message}</p>
      <p class="note">
        <span class="kind">{error.kind}</span> · retrying every few seconds
      </p>
    </section>
  );
}

function TaskList({ groups, now }: { groups: DeskGroup[]; now: number }) {
  return (
    <>
      {groups.map((group) => (
        <section class="desk" key={group.desk}>
          <h2 class="desk-name">
            {group.desk}
            <span class="desk-count">{group.tasks.length}</span>
          </h2>
          <ul>
            {group.tasks.map((task) => (
              <TaskRow key={task.id} task={task} now={now} />
            ))}
          </ul>
        </section>
      ))}
    </>
  );
}

function TaskRow({ task, now }: { task: TaskView; now: number }) {
  const label = stateLabel(task);
  const title = firstLine(task.request) || '(empty request)';
  return (
    <li class={`task state-${task.state}${task.stalledAt ? ' is-stalled' : ''}`} data-task-id={task.id}>
      <div class="meta">
        <span class={`badge badge-${label}`}>{label}</span>
        {task.stalledAt && <span class="badge badge-stalled">stalled</span>}
        <span class="asker" title={`asked by ${task.asker}`}>
          from {task.asker}
        </span>
        <span class="age" title={`created ${task.createdAt}`}>
          {formatAge(task.createdAt, now)}
        </span>
        {task.queuePosition !== null && <span class="queue">#{task.queuePosition} in queue</span>}
      </div>
      <p class="request" title={task.request}>
        {title}
      </p>
      {task.statusText && <p class="status-text">{task.statusText}</p>}
      {task.lastWords && (
        <p class="last-words" title="the worker's last words">
          {task.lastWords}
        </p>
      )}
      {task.remindersSent > 0 && (
        <p class="reminders">
          {plural(task.remindersSent, 'reminder', 'reminders')} sent
          {task.lastReminderAt && `, last ${formatAgo(task.lastReminderAt, now)}`}
        </p>
      )}
    </li>
  );
}
