// Open tasks, grouped by desk, as the live feed keeps them.

import type { Ref } from 'preact';
import type { Load } from '../hooks';
import { valueOf } from '../hooks';
import { Code, Empty, ErrorBanner, Loading, TaskRow } from '../parts';
import { groupByDesk } from '../tasks';
import type { TaskView } from '../types';

export function OpenView({ load, now, listRef }: { load: Load<TaskView[]>; now: number; listRef: Ref<HTMLDivElement> }) {
  const tasks = valueOf(load);
  return (
    <div ref={listRef} class="view">
      <h2 class="visually-hidden" tabIndex={-1} data-view-heading>
        Open tasks
      </h2>
      {load.status === 'error' && (
        <ErrorBanner
          title="Can't load the open tasks"
          error={load.error}
          note={tasks ? 'Showing the last list that loaded.' : undefined}
        />
      )}
      {load.status === 'loading' && <Loading />}
      {tasks && tasks.length === 0 && load.status === 'ready' && (
        <Empty title="No open tasks.">
          <p>When an agent gives one of your desks a task over A2A, it shows up here until the worker says it is done.</p>
          <p>
            <Code text={'Try one yourself: `taskkeeper task add DESK "…"`'} />
          </p>
          <p class="note">
            No desks yet? <a href="#/desks">Desks and sessions</a> shows how to connect Claude Code.
          </p>
        </Empty>
      )}
      {tasks &&
        groupByDesk(tasks).map((group) => (
          <section class="desk" key={group.desk} aria-label={`desk ${group.desk}`}>
            <h3 class="desk-name">
              {group.desk}
              <span class="desk-count" aria-label={`${group.tasks.length} open`}>
                {group.tasks.length}
              </span>
            </h3>
            <ul>
              {group.tasks.map((task) => (
                <TaskRow key={task.id} task={task} now={now} />
              ))}
            </ul>
          </section>
        ))}
    </div>
  );
}
