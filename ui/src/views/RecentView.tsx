// Recent: the tasks that ended in the last days (as long as `tasks.keep_ended` keeps them),
// the last to end first, with how each ended and whether its asker acknowledged the ending.

import type { DataSource } from '../data';
import { useResource, valueOf } from '../hooks';
import { Code, Empty, ErrorBanner, Loading, TaskRow } from '../parts';
import { groupByDay, sortRecent } from '../tasks';
import { useEffect } from 'preact/hooks';

export function RecentView({ data, now, changeSeq, keepEnded }: { data: DataSource; now: number; changeSeq: number; keepEnded: string | null }) {
  const recent = useResource(() => data.listTasks('ended'), [data]);
  // A change may end a task or record an acknowledgement: re-read (a burst costs one read).
  useEffect(() => {
    if (changeSeq > 0) recent.refreshSoon();
  }, [changeSeq]);
  const tasks = valueOf(recent.load);
  const sorted = tasks ? sortRecent(tasks) : null;
  return (
    <div class="view">
      <h2 class="visually-hidden" tabIndex={-1} data-view-heading>
        Recent tasks
      </h2>
      {recent.load.status === 'error' && <ErrorBanner title="Can't load the recent tasks" error={recent.load.error} />}
      {recent.load.status === 'loading' && <Loading />}
      {sorted && sorted.length === 0 && recent.load.status === 'ready' && (
        <Empty title="Nothing ended recently.">
          <p>Tasks come here when their worker finishes or gives up, or when you or the asker cancel them.</p>
          <p class="note">
            <Code text={`They are kept for ${keepEnded ?? 'a week'} (\`tasks.keep_ended\` in Settings).`} />
          </p>
        </Empty>
      )}
      {sorted &&
        groupByDay(sorted, now).map((day) => (
          <section class="desk" key={day.label} aria-label={day.label}>
            <h3 class="desk-name">{day.label}</h3>
            <ul>
              {day.tasks.map((task) => (
                <TaskRow key={task.id} task={task} now={now} ended />
              ))}
            </ul>
          </section>
        ))}
    </div>
  );
}
