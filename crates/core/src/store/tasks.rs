//! The tasks table: every change to a task goes through [`Store::apply`] (or
//! [`Store::submit`] for a new one), which loads the task, asks [`transition::apply`] for the
//! next version, writes it over the version it read, and lets the desk's queue move on
//! ([`queue::next_to_start`]) in the same transaction. A call returns only after the commit
//! that made its change durable.

use std::sync::mpsc;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};

use super::counts::{
    fill_positions, open_task_count_of_asker, position_of_newest, task_with_position,
};
use super::desks::load_desk;
use super::error::StoreError;
use super::open::Store;
use super::push;
use super::rows::{decode_task, decode_tasks, filter_on, load_task};
use super::settings::load_settings;
use crate::clock::Timestamp;
use crate::desk::DeskName;
use crate::limits;
use crate::queue;
use crate::task::{NewTask, Task, TaskId, TaskState};
use crate::transition::{self, Event};

/// Which tasks to list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StateFilter {
    #[default]
    All,
    /// Not yet ended: queued, working or blocked.
    Open,
    /// Completed, failed, canceled or rejected.
    Ended,
    /// Open and not queued (working or blocked): what a desk's session holds, read from an
    /// index without the desk's queue.
    Unqueued,
}

#[derive(Debug, Clone, Default)]
pub struct TaskFilter {
    pub state: StateFilter,
    pub desk: Option<DeskName>,
    pub asker: Option<String>,
    pub limit: Option<u32>,
}

/// A page of [`Store::task_page`].
#[derive(Debug, Clone)]
pub struct PageQuery {
    pub asker: Option<String>,
    pub desk: Option<DeskName>,
    pub context_id: Option<String>,
    pub state: Option<TaskState>,
    /// Only tasks whose status changed at or after this time.
    pub status_after: Option<Timestamp>,
    /// Continue after this (status time, id).
    pub after: Option<(Timestamp, TaskId)>,
    pub limit: u32,
}

/// What a send with a `messageId` the asker used before does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resend {
    /// Returns the task the first send created, and changes nothing (the rule).
    SameTask,
    /// Creates a new task anyway (the conformance desk, [`Store::submit_each`]).
    NewTask,
}

/// The outcome of a change: the task as it is now, plus other tasks that changed with it
/// (the next queued task that started when this one freed its desk).
#[derive(Debug, Clone)]
pub struct Changed {
    pub task: Task,
    /// False when the call changed nothing (an idempotent repeat).
    pub changed: bool,
    pub others: Vec<Task>,
    /// Whether the change queued a push for a webhook (a task with none queues nothing), so
    /// the push sender need not look at its queue after every change.
    pub pushed: bool,
}

impl Store {
    /// Give a desk a task. Idempotent on (asker, request messageId): a resend returns the task
    /// the first send created and changes nothing. The task starts at once when its desk is
    /// free, else it waits in the desk's queue.
    pub fn submit(&self, new: NewTask, now: Timestamp) -> Result<Changed, StoreError> {
        self.submit_with(new, Resend::SameTask, None, now)
    }

    /// Give a desk a task even when the asker sent this `messageId` before: every send is a
    /// new task. Only for the conformance desk, whose kit reuses one `messageId` per scenario
    /// for a whole run (against A2A's rule that a message id is unique), so that each of its
    /// sends gets the behaviour it asks for instead of a task an earlier scenario ended.
    pub fn submit_each(
        &self,
        new: NewTask,
        webhook: Option<crate::push::NewPushConfig>,
        now: Timestamp,
    ) -> Result<Changed, StoreError> {
        self.submit_with(new, Resend::NewTask, webhook, now)
    }

    /// [`Store::submit`] with a webhook for the new task (A2A's push config inline in
    /// SendMessage), set in the same transaction, so its first push is the new task. A resend
    /// returns the first task and sets nothing.
    pub fn submit_with_push(
        &self,
        new: NewTask,
        webhook: Option<crate::push::NewPushConfig>,
        now: Timestamp,
    ) -> Result<Changed, StoreError> {
        self.submit_with(new, Resend::SameTask, webhook, now)
    }

    fn submit_with(
        &self,
        new: NewTask,
        resend: Resend,
        webhook: Option<crate::push::NewPushConfig>,
        now: Timestamp,
    ) -> Result<Changed, StoreError> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.submit_then(new, resend, webhook, now, move |r| {
            let _ = tx.send(r);
        });
        rx.recv().map_err(|_| StoreError::Closed)?
    }

    /// [`Store::submit_with_push`] (or, with [`Resend::NewTask`], [`Store::submit_each`])
    /// without waiting: `done` hears the outcome on the writer thread once the commit is
    /// durable, so an async caller needs no thread of its own to wait on (see
    /// [`Store::write_then`]).
    pub fn submit_then(
        &self,
        new: NewTask,
        resend: Resend,
        webhook: Option<crate::push::NewPushConfig>,
        now: Timestamp,
        done: impl FnOnce(Result<Changed, StoreError>) + Send + 'static,
    ) {
        self.write_then(move |c| {
            if resend == Resend::SameTask
                && let Some(mut existing) =
                    load_task_by_request(c, &new.asker, &new.request.message_id)?
            {
                fill_positions(c, std::slice::from_mut(&mut existing))?;
                return Ok(Changed {
                    task: existing,
                    changed: false,
                    others: Vec::new(),
                    pushed: false,
                });
            }
            if load_desk(c, new.desk.as_str())?.is_none() {
                return Err(StoreError::NoSuchDesk(new.desk.to_string()));
            }
            // Counted in the write transaction, so two sends racing for the last place
            // cannot both pass.
            let open = open_task_count_of_asker(c, &new.asker)?;
            limits::new_task(&new, open, &load_settings(c)?.limits)?;
            // Order matters only among open tasks, so the open-task index answers this
            // without walking the desk's history.
            let seq: i64 = c
                .prepare_cached(
                    "SELECT COALESCE(MAX(queue_seq), 0) + 1 FROM tasks WHERE desk = ?1 AND ended_at IS NULL",
                )?
                .query_row([new.desk.as_str()], |r| r.get(0))?;
            let mut task = Task::submit(TaskId::generate(), new, seq, now);
            if resend == Resend::NewTask {
                // The resend key must still be unique per asker; the task id makes it so, and
                // no later send can name it.
                task.request_message_id = format!("{}\u{0}{}", task.request_message_id, task.id);
            }
            insert_task(c, &task)?;
            let started = start_next(c, &task.desk, now)?;
            // The task as written, or as it started: no read back, no second decode.
            let mut task = started
                .iter()
                .find(|t| t.id == task.id)
                .cloned()
                .unwrap_or(task);
            position_of_newest(c, &mut task)?;
            let mut pushed = false;
            if let Some(config) = webhook {
                push::insert_config(c, &task, config, now)?;
                pushed = true;
            }
            let others: Vec<Task> = started.into_iter().filter(|t| t.id != task.id).collect();
            for other in &others {
                pushed |= push::enqueue(c, Some(other), other, now)?;
            }
            Ok(Changed {
                task,
                changed: true,
                others,
                pushed,
            })
        }, done);
    }

    /// Apply `event` to task `id` (see [`transition::apply`]) and let its desk's queue move on.
    pub fn apply(&self, id: &TaskId, event: Event, now: Timestamp) -> Result<Changed, StoreError> {
        self.apply_to(id, None, event, now)
    }

    /// [`Store::apply`], only to the task as it was at `version` (whoever acts on what they
    /// read, such as a delivery that sent that version's text): a newer version is refused
    /// with [`StoreError::Conflict`] and nothing changes.
    pub fn apply_at(
        &self,
        id: &TaskId,
        version: u64,
        event: Event,
        now: Timestamp,
    ) -> Result<Changed, StoreError> {
        self.apply_to(id, Some(version), event, now)
    }

    fn apply_to(
        &self,
        id: &TaskId,
        version: Option<u64>,
        event: Event,
        now: Timestamp,
    ) -> Result<Changed, StoreError> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.apply_then(id, version, event, now, move |r| {
            let _ = tx.send(r);
        });
        rx.recv().map_err(|_| StoreError::Closed)?
    }

    /// [`Store::apply`] (with `version`, [`Store::apply_at`]) without waiting: `done` hears
    /// the outcome on the writer thread once the commit is durable (see
    /// [`Store::write_then`]).
    pub fn apply_then(
        &self,
        id: &TaskId,
        version: Option<u64>,
        event: Event,
        now: Timestamp,
        done: impl FnOnce(Result<Changed, StoreError>) + Send + 'static,
    ) {
        let id = id.clone();
        let follow_up = match &event {
            Event::FollowUp { message } => Some(limits::message_size(message)),
            _ => None,
        };
        self.write_then(
            move |c| {
                let before =
                    load_task(c, &id)?.ok_or_else(|| StoreError::NoSuchTask(id.clone()))?;
                if version.is_some_and(|v| v != before.version) {
                    return Err(StoreError::Conflict(id));
                }
                let after = transition::apply(&before, event, now)?;
                if let Some(size) = follow_up
                    && after.version != before.version
                {
                    limits::follow_up(&after, size, &load_settings(c)?.limits)?;
                }
                if after.version == before.version {
                    let mut task = after;
                    fill_positions(c, std::slice::from_mut(&mut task))?;
                    return Ok(Changed {
                        task,
                        changed: false,
                        others: Vec::new(),
                        pushed: false,
                    });
                }
                update_task(c, &before, &after)?;
                let others = start_next(c, &after.desk, now)?;
                // The task as written (or as it started): no read back, no second decode.
                let mut task = others.iter().find(|t| t.id == id).cloned().unwrap_or(after);
                fill_positions(c, std::slice::from_mut(&mut task))?;
                // Queued with the change: an answered change is a queued push, across crashes.
                let mut pushed = push::enqueue(c, Some(&before), &task, now)?;
                for other in &others {
                    pushed |= push::enqueue(c, Some(other), other, now)?;
                }
                Ok(Changed {
                    task,
                    changed: true,
                    others,
                    pushed,
                })
            },
            done,
        );
    }

    pub fn task(&self, id: &TaskId) -> Result<Option<Task>, StoreError> {
        self.read(|c| task_with_position(c, id))
    }

    /// [`Store::task`] if a read connection is idle now, else `None` (see
    /// [`Store::try_read`]): one lookup by primary key, plus, for a queued task, the count of
    /// the queue ahead of it on an index, so it is short enough to run where the caller is.
    pub fn try_task(&self, id: &TaskId) -> Option<Result<Option<Task>, StoreError>> {
        self.try_read(|c| task_with_position(c, id))
    }

    /// Tasks matching `filter`: open ones oldest first, ended ones most recently ended first.
    pub fn tasks(&self, filter: &TaskFilter) -> Result<Vec<Task>, StoreError> {
        self.read(|c| {
            let mut stmt = c.prepare_cached(&tasks_sql(filter))?;
            let limit = filter.limit.map_or(-1, i64::from);
            let rows = stmt.query_map(
                params![
                    filter.desk.as_ref().map(DeskName::as_str),
                    filter.asker.as_deref(),
                    limit
                ],
                |r| r.get::<_, String>(0),
            )?;
            let mut tasks = decode_tasks(rows)?;
            fill_positions(c, &mut tasks)?;
            Ok(tasks)
        })
    }

    /// The open tasks of `desk` that may expire by the time their creation is at or before
    /// `created_by`, and the desk's earliest open task (whose expiry comes next), from the
    /// index of open tasks by creation time: what the watchdog needs of a desk's queue
    /// without reading all of it.
    pub fn expiring_tasks(
        &self,
        desk: &DeskName,
        created_by: Timestamp,
    ) -> Result<Vec<Task>, StoreError> {
        // Two bounded reads instead of one `OR`, which walks every open task of the desk:
        // the range of those created by `created_by`, which holds the earliest whenever it
        // is not empty, and only when it is empty the earliest alone.
        self.read(|c| {
            let mut expiring = c.prepare_cached(
                "SELECT body FROM tasks WHERE desk = ?1 AND ended_at IS NULL \
                 AND created_at <= ?2 ORDER BY created_at",
            )?;
            let rows = expiring.query_map(params![desk.as_str(), created_by.as_millis()], |r| {
                r.get::<_, String>(0)
            })?;
            let tasks = decode_tasks(rows)?;
            if !tasks.is_empty() {
                return Ok(tasks);
            }
            let mut earliest = c.prepare_cached(
                "SELECT body FROM tasks WHERE desk = ?1 AND ended_at IS NULL \
                 ORDER BY created_at LIMIT 1",
            )?;
            let rows = earliest.query_map([desk.as_str()], |r| r.get::<_, String>(0))?;
            decode_tasks(rows)
        })
    }

    /// One page of tasks, newest status first (ties broken by id, descending), and how many
    /// match the filters in all. The cursor is the (status time, id) of the last task of the
    /// previous page.
    pub fn task_page(&self, q: &PageQuery) -> Result<(Vec<Task>, u64), StoreError> {
        self.read(|c| {
            let filters_sql = format!(
                "{} AND {} AND {} AND {} AND (?5 IS NULL OR status_at >= ?5)",
                filter_on("asker", 1, q.asker.is_some()),
                filter_on("desk", 2, q.desk.is_some()),
                filter_on("context_id", 3, q.context_id.is_some()),
                filter_on("state", 4, q.state.is_some()),
            );
            let filters_sql = filters_sql.as_str();
            let filters = params![
                q.asker.as_deref(),
                q.desk.as_ref().map(DeskName::as_str),
                q.context_id.as_deref(),
                q.state.map(TaskState::as_str),
                q.status_after.map(Timestamp::as_millis),
            ];
            let total: i64 = c
                .prepare_cached(&format!("SELECT COUNT(*) FROM tasks WHERE {filters_sql}"))?
                .query_row(filters, |r| r.get(0))?;
            let sql = format!(
                "SELECT body FROM tasks WHERE {filters_sql} \
                 AND (?6 IS NULL OR status_at < ?6 OR (status_at = ?6 AND id < ?7)) \
                 ORDER BY status_at DESC, id DESC LIMIT ?8"
            );
            let mut stmt = c.prepare_cached(&sql)?;
            let rows = stmt.query_map(
                params![
                    q.asker.as_deref(),
                    q.desk.as_ref().map(DeskName::as_str),
                    q.context_id.as_deref(),
                    q.state.map(TaskState::as_str),
                    q.status_after.map(Timestamp::as_millis),
                    q.after.as_ref().map(|(t, _)| t.as_millis()),
                    q.after.as_ref().map(|(_, id)| id.as_str()),
                    i64::from(q.limit),
                ],
                |r| r.get::<_, String>(0),
            )?;
            let mut tasks = decode_tasks(rows)?;
            fill_positions(c, &mut tasks)?;
            Ok((tasks, total.unsigned_abs()))
        })
    }

    /// Delete tasks that ended more than `keep` before `now`; returns how many.
    pub fn prune_ended(&self, now: Timestamp, keep: Duration) -> Result<usize, StoreError> {
        let cutoff = now.minus(keep).as_millis();
        self.write(move |c| {
            Ok(c.execute(
                "DELETE FROM tasks WHERE ended_at IS NOT NULL AND ended_at < ?1",
                [cutoff],
            )?)
        })
    }

    /// When the oldest ended task is due to be pruned, if any ended task is kept.
    pub fn next_prune_at(&self, keep: Duration) -> Result<Option<Timestamp>, StoreError> {
        self.read(|c| {
            let oldest: Option<i64> =
                c.query_row("SELECT MIN(ended_at) FROM tasks", [], |r| r.get(0))?;
            Ok(oldest.map(|t| Timestamp::from_millis(t).plus(keep)))
        })
    }
}

/// [`Store::tasks`]'s query: `?1` the desk, `?2` the asker, `?3` the limit.
pub(super) fn tasks_sql(filter: &TaskFilter) -> String {
    let (cond, order) = match filter.state {
        StateFilter::All => ("1", "created_at, rowid"),
        StateFilter::Open => ("ended_at IS NULL", "created_at, rowid"),
        StateFilter::Ended => ("ended_at IS NOT NULL", "ended_at DESC, rowid DESC"),
        StateFilter::Unqueued => (
            "ended_at IS NULL AND state != 'submitted'",
            "created_at, rowid",
        ),
    };
    format!(
        "SELECT body FROM tasks WHERE {cond} AND {} AND {} ORDER BY {order} LIMIT ?3",
        filter_on("desk", 1, filter.desk.is_some()),
        filter_on("asker", 2, filter.asker.is_some()),
    )
}

pub(super) fn load_task_by_request(
    c: &Connection,
    asker: &str,
    message_id: &str,
) -> Result<Option<Task>, StoreError> {
    let mut stmt =
        c.prepare_cached("SELECT body FROM tasks WHERE asker = ?1 AND request_message_id = ?2")?;
    let body: Option<String> = stmt
        .query_row([asker, message_id], |r| r.get(0))
        .optional()?;
    body.map(|b| decode_task(&b)).transpose()
}

pub(super) fn ended_at(t: &Task) -> Option<i64> {
    t.state()
        .is_terminal()
        .then_some(t.status.timestamp.as_millis())
}

pub(super) fn insert_task(c: &Connection, t: &Task) -> Result<(), StoreError> {
    let body = serde_json::to_string(t)?;
    c.prepare_cached(
        "INSERT INTO tasks (id, desk, asker, request_message_id, context_id, state, queue_seq, created_at, \
         updated_at, ended_at, version, body, status_at, holds_desk) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
    )?
    .execute(params![
        t.id.as_str(),
        t.desk.as_str(),
        t.asker,
        t.request_message_id,
        t.context_id,
        t.state().as_str(),
        t.queue_seq,
        t.created_at.as_millis(),
        t.updated_at.as_millis(),
        ended_at(t),
        i64::try_from(t.version).unwrap_or(i64::MAX),
        body,
        t.status.timestamp.as_millis(),
        queue::holds_desk(t),
    ])?;
    Ok(())
}

/// Write `after` over `before`, only if nobody wrote a newer version in between.
pub(super) fn update_task(c: &Connection, before: &Task, after: &Task) -> Result<(), StoreError> {
    let body = serde_json::to_string(after)?;
    let n = c
        .prepare_cached(
            "UPDATE tasks SET state = ?2, updated_at = ?3, ended_at = ?4, version = ?5, body = ?6, \
             status_at = ?8, holds_desk = ?9 WHERE id = ?1 AND version = ?7",
        )?
        .execute(params![
            after.id.as_str(),
            after.state().as_str(),
            after.updated_at.as_millis(),
            ended_at(after),
            i64::try_from(after.version).unwrap_or(i64::MAX),
            body,
            i64::try_from(before.version).unwrap_or(i64::MAX),
            after.status.timestamp.as_millis(),
            queue::holds_desk(after),
        ])?;
    if n == 1 {
        Ok(())
    } else {
        Err(StoreError::Conflict(after.id.clone()))
    }
}

/// Start the desk's next queued task if the desk is free. Returns the task that started.
///
/// [`queue::next_to_start`] decides, over the only tasks that can matter: one task that
/// holds the desk (the `holds_desk` column, written from [`queue::holds_desk`] with every
/// version) and the desk's first queued task. Both come from an index, so the cost does not
/// grow with the queue.
pub(super) fn start_next(
    c: &Connection,
    desk: &DeskName,
    now: Timestamp,
) -> Result<Vec<Task>, StoreError> {
    let holder: Option<String> = c
        .prepare_cached(
            // Not `AND ended_at IS NULL` too (a holder is open by the rule): with it SQLite
            // may walk the desk's open tasks on their index instead of the holders' index.
            "SELECT body FROM tasks WHERE desk = ?1 AND holds_desk = 1 LIMIT 1",
        )?
        .query_row([desk.as_str()], |r| r.get(0))
        .optional()?;
    let first_queued: Option<String> = match holder {
        Some(_) => None,
        None => c
            .prepare_cached(
                "SELECT body FROM tasks WHERE desk = ?1 AND state = 'submitted' \
                 ORDER BY queue_seq LIMIT 1",
            )?
            .query_row([desk.as_str()], |r| r.get(0))
            .optional()?,
    };
    let candidates = decode_tasks(holder.into_iter().chain(first_queued).map(Ok))?;
    let Some(next) = queue::next_to_start(&candidates) else {
        return Ok(Vec::new());
    };
    let started = transition::apply(next, Event::Start, now)?;
    update_task(c, next, &started)?;
    Ok(vec![started])
}

#[cfg(test)]
mod tests {
    use super::super::sessions::sessions_sql;
    use super::*;
    use crate::store::StoreOptions;

    /// A desk's open and ended tasks and its sessions are read from an index, never by
    /// walking every task or session (the watchdog and the waiters read one desk per change).
    #[test]
    fn one_desks_tasks_and_sessions_come_from_an_index() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db"), StoreOptions::default()).unwrap();
        let desk = Some("web".parse::<DeskName>().unwrap());
        let queries = [
            tasks_sql(&TaskFilter {
                state: StateFilter::Open,
                desk: desk.clone(),
                ..Default::default()
            }),
            tasks_sql(&TaskFilter {
                state: StateFilter::Unqueued,
                desk: desk.clone(),
                ..Default::default()
            }),
            tasks_sql(&TaskFilter {
                state: StateFilter::Ended,
                desk: desk.clone(),
                ..Default::default()
            }),
            tasks_sql(&TaskFilter {
                state: StateFilter::All,
                asker: Some("a".into()),
                ..Default::default()
            }),
            sessions_sql(true),
            // The watchdog's expiring tasks of a desk, on every change of the desk.
            "SELECT body FROM tasks WHERE desk = ?1 AND ended_at IS NULL \
             AND created_at <= ?2 ORDER BY created_at"
                .to_owned(),
        ];
        for sql in queries {
            let plan: Vec<String> = store
                .read(|c| {
                    let mut stmt = c.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
                    let values: [&dyn rusqlite::ToSql; 3] = [&"web", &"a", &-1];
                    let n = stmt.parameter_count();
                    let rows = stmt.query_map(&values[..n], |r| r.get::<_, String>(3))?;
                    Ok(rows.collect::<Result<Vec<_>, _>>()?)
                })
                .unwrap();
            assert!(
                plan.iter()
                    .any(|p| p.contains("USING INDEX") || p.contains("USING COVERING INDEX"))
                    && !plan
                        .iter()
                        .any(|p| p.starts_with("SCAN tasks") || p.starts_with("SCAN sessions")),
                "{sql}: {plan:?}"
            );
            // A desk's working and blocked tasks from their own index, not by walking its
            // open tasks (the queue) in creation order.
            if sql.contains("state != 'submitted'") {
                assert!(
                    plan.iter().any(|p| p.contains("tasks_unqueued_by_desk")),
                    "{sql}: {plan:?}"
                );
            }
        }
    }
}
