//! What the store counts rather than reads: queue positions (the one place they are computed:
//! on the queued-tasks index, without decoding a task), the counts the schema keeps
//! (`task_counts`), and what each desk holds of open work.

use std::collections::BTreeMap;

use rusqlite::{Connection, OptionalExtension, params};

use super::error::StoreError;
use super::open::Store;
use super::rows::desk_name;
use super::rows::load_task;
use crate::desk::DeskName;
use crate::task::{Task, TaskId, TaskState};

/// What a desk holds of open work ([`Store::desk_loads`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeskLoad {
    pub open_tasks: usize,
    /// A queued task, or one that holds the desk: work a session would take.
    pub has_work: bool,
}

impl Store {
    /// Whether `desk` has work a session would take ([`crate::autolaunch::has_work`]: a
    /// queued task, or one that holds the desk), from two indexes, without reading the
    /// desk's tasks: what the auto-launch loop asks of each desk on every change.
    pub fn desk_has_work(&self, desk: &DeskName) -> Result<bool, StoreError> {
        self.read(|c| {
            Ok(c.prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM tasks WHERE desk = ?1 AND holds_desk = 1) \
                 OR EXISTS (SELECT 1 FROM tasks WHERE desk = ?1 AND state = 'submitted')",
            )?
            .query_row([desk.as_str()], |r| r.get(0))?)
        })
    }

    /// What each desk holds of open work, by desk name: how many open tasks, and whether it has
    /// work a session would take (as [`Store::desk_has_work`]). Counted on the open tasks'
    /// indexes, not one task decoded: what the owner's desk list shows of every desk.
    pub fn desk_loads(&self) -> Result<BTreeMap<DeskName, DeskLoad>, StoreError> {
        self.read(|c| {
            let mut loads = BTreeMap::new();
            let mut open = c.prepare_cached(
                "SELECT desk, COUNT(*) FROM tasks WHERE ended_at IS NULL GROUP BY desk",
            )?;
            for row in open.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
                let (name, n) = row?;
                let load = DeskLoad {
                    open_tasks: usize::try_from(n).unwrap_or(0),
                    has_work: false,
                };
                loads.insert(desk_name(name)?, load);
            }
            let mut working = c.prepare_cached(
                "SELECT desk FROM tasks WHERE holds_desk = 1 \
                 UNION SELECT desk FROM tasks WHERE state = 'submitted'",
            )?;
            for name in working.query_map([], |r| r.get::<_, String>(0))? {
                if let Some(load) = loads.get_mut(&desk_name(name?)?) {
                    load.has_work = true;
                }
            }
            Ok(loads)
        })
    }
}

/// A count the schema keeps (`task_counts`, see schema V6): `open` tasks by asker, `queued`
/// tasks by desk. One row, whatever the count.
pub(super) fn kept_count(c: &Connection, scope: &str, name: &str) -> Result<u64, StoreError> {
    let n: Option<i64> = c
        .prepare_cached("SELECT n FROM task_counts WHERE scope = ?1 AND name = ?2")?
        .query_row([scope, name], |r| r.get(0))
        .optional()?;
    Ok(n.unwrap_or(0).unsigned_abs())
}

/// How many open tasks `asker` has, on any desk.
pub(super) fn open_task_count_of_asker(c: &Connection, asker: &str) -> Result<u64, StoreError> {
    kept_count(c, "open", asker)
}

/// The queue position of a task just submitted to `desk`, if it is queued: it has the
/// desk's highest queue number (one more than any open task's), so every other queued task
/// of the desk is ahead of it and its position is the desk's queued count, which the schema
/// keeps, instead of a count of the queue ahead of it ([`fill_positions`]).
pub(super) fn position_of_newest(c: &Connection, task: &mut Task) -> Result<(), StoreError> {
    task.queue_position = None;
    if task.state() == TaskState::Submitted {
        task.queue_position = u32::try_from(kept_count(c, "queued", task.desk.as_str())?).ok();
    }
    Ok(())
}

/// Task `id` with its queue position.
pub(super) fn task_with_position(c: &Connection, id: &TaskId) -> Result<Option<Task>, StoreError> {
    let Some(mut t) = load_task(c, id)? else {
        return Ok(None);
    };
    fill_positions(c, std::slice::from_mut(&mut t))?;
    Ok(Some(t))
}

/// Fill in queue positions for the queued tasks among `tasks`, the one place a position is
/// computed: a queued task's position is how many queued tasks of its desk come before it in
/// queue order (`queue_seq`), plus one, counted on the queued-tasks index without decoding
/// any task (so a read costs the same whatever the queue holds). Several tasks of one desk
/// share one read of the desk's queue order; a task just submitted is last in its queue, and
/// [`position_of_newest`] reads the same number from the desk's kept count.
pub(super) fn fill_positions(c: &Connection, tasks: &mut [Task]) -> Result<(), StoreError> {
    let mut by_desk: BTreeMap<DeskName, Vec<usize>> = BTreeMap::new();
    for (i, t) in tasks.iter_mut().enumerate() {
        t.queue_position = None;
        if t.state() == TaskState::Submitted {
            by_desk.entry(t.desk.clone()).or_default().push(i);
        }
    }
    for (desk, queued) in by_desk {
        if let [i] = queued[..] {
            let ahead: i64 = c
                .prepare_cached(
                    "SELECT COUNT(*) FROM tasks WHERE desk = ?1 AND state = 'submitted' \
                     AND queue_seq < ?2",
                )?
                .query_row(params![desk.as_str(), tasks[i].queue_seq], |r| r.get(0))?;
            tasks[i].queue_position = u32::try_from(ahead + 1).ok();
            continue;
        }
        let order: Vec<i64> = c
            .prepare_cached(
                "SELECT queue_seq FROM tasks WHERE desk = ?1 AND state = 'submitted' \
                 ORDER BY queue_seq",
            )?
            .query_map([desk.as_str()], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        for i in queued {
            let ahead = order.partition_point(|seq| *seq < tasks[i].queue_seq);
            tasks[i].queue_position = u32::try_from(ahead + 1).ok();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rusqlite::Connection;

    use super::*;
    use crate::clock::Timestamp;
    use crate::desk::AgentKind;
    use crate::store::{NewDesk, StoreOptions};
    use crate::task::NewTask;
    use crate::transition::Event;

    /// (scope, name, count) rows.
    type Counts = Vec<(String, String, i64)>;

    /// The kept counts as they are, and as counting the tasks gives them, without zeros.
    fn kept_and_counted(store: &Store) -> (Counts, Counts) {
        store
            .read(|c| {
                let rows = |sql: &str| -> Result<Counts, StoreError> {
                    let mut stmt = c.prepare(sql)?;
                    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
                    Ok(rows.collect::<Result<_, _>>()?)
                };
                Ok((
                    rows("SELECT scope, name, n FROM task_counts WHERE n != 0 ORDER BY scope, name")?,
                    rows(
                        "SELECT 'open', asker, COUNT(*) FROM tasks WHERE ended_at IS NULL GROUP BY asker \
                         UNION ALL SELECT 'queued', desk, COUNT(*) FROM tasks WHERE state = 'submitted' \
                         GROUP BY desk ORDER BY 1, 2",
                    )?,
                ))
            })
            .unwrap()
    }

    fn send(store: &Store, desk: &str, asker: &str, id: &str, now: Timestamp) -> Task {
        let new = NewTask {
            desk: desk.parse().unwrap(),
            asker: asker.to_owned(),
            request: crate::task::Message::user_text(id, "do it"),
            context_id: None,
            metadata: serde_json::Map::new(),
        };
        store.submit(new, now).unwrap().task
    }

    /// The counts a submit reads instead of counting (each asker's open tasks, each desk's
    /// queued ones) stay equal to counting the tasks through submits, starts, a cancel in the
    /// middle of a queue, ends, a block, a resend, a prune, and a migration from before them.
    #[test]
    fn the_kept_counts_stay_equal_to_counting_the_tasks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let t0 = Timestamp::from_millis(1_700_000_000_000);
        let store = Store::open(&path, StoreOptions::default()).unwrap();
        for name in ["web", "api"] {
            store
                .add_desk(
                    NewDesk {
                        name: name.parse().unwrap(),
                        agent: AgentKind::ClaudeCode,
                        dir: dir.path().join(name),
                        deliver_command: None,
                    },
                    t0,
                )
                .unwrap();
        }
        let check = |store: &Store, when: &str| {
            let (kept, counted) = kept_and_counted(store);
            assert_eq!(kept, counted, "after {when}");
        };
        let mut web = Vec::new();
        for i in 0..5 {
            let asker = if i % 2 == 0 { "a" } else { "b" };
            web.push(send(&store, "web", asker, &format!("w{i}"), t0));
        }
        let api = send(&store, "api", "a", "p0", t0);
        send(&store, "web", "a", "w0", t0); // a resend: nothing new
        check(&store, "submits");
        assert_eq!(web[4].queue_position, Some(4));
        store
            .apply(&web[2].id, Event::Cancel { reason: None }, t0)
            .unwrap();
        check(&store, "a cancel in the middle of the queue");
        store
            .apply(
                &web[0].id,
                Event::WorkerDone {
                    summary: "ok".into(),
                },
                t0,
            )
            .unwrap();
        check(&store, "an end that starts the next");
        store
            .apply(&api.id, Event::WorkerFailed { why: "no".into() }, t0)
            .unwrap();
        store.apply(&web[1].id, Event::Stall, t0).unwrap();
        check(&store, "a failure and a stall");
        let later = t0.plus(Duration::from_secs(30 * 86_400));
        store
            .prune_ended(later, Duration::from_secs(86_400))
            .unwrap();
        check(&store, "a prune");
        assert_eq!(send(&store, "web", "b", "w9", t0).queue_position, Some(2));
        check(&store, "a submit after all that");
        store.close();
        drop(store);

        // As version 5 left it: the migration fills the counts from the tasks.
        let c = Connection::open(&path).unwrap();
        c.execute_batch(
            "DROP TRIGGER task_counts_insert; DROP TRIGGER task_counts_delete; \
             DROP TRIGGER task_counts_update_open; DROP TRIGGER task_counts_update_queued; \
             DROP TABLE task_counts; DROP INDEX desks_auto_launch; PRAGMA user_version = 5;",
        )
        .unwrap();
        drop(c);
        let store = Store::open(&path, StoreOptions::default()).unwrap();
        let (kept, _) = kept_and_counted(&store);
        assert!(!kept.is_empty());
        check(&store, "the migration");
    }
}
