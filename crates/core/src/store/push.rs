//! The store's side of push notifications ([`crate::push`]): each task's webhooks, and the
//! queue of deliveries. A task change queues its items for every webhook of the task in the
//! change's own transaction ([`enqueue`], called by `submit` and `apply`), so what was
//! answered as changed is also queued, across crashes; the sender takes the head of each
//! webhook's queue ([`Store::push_due`]) and reports each attempt ([`Store::push_attempted`]).

use rusqlite::{Connection, OptionalExtension, params};

use super::error::StoreError;
use super::open::Store;
use super::rows::load_task;
use super::settings::load_settings;
use crate::clock::Timestamp;
use crate::limits;
use crate::push::{self, Attempted, Delivery, NewPushConfig, PushAuth, PushConfig, PushItem};
use crate::task::{Task, TaskId};

const CONFIG_COLUMNS: &str =
    "task_id, id, url, token, auth_scheme, auth_credentials, version, created_at";

fn config_from_row(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<PushConfig> {
    let scheme: Option<String> = r.get(at + 4)?;
    let credentials: Option<String> = r.get(at + 5)?;
    Ok(PushConfig {
        task_id: TaskId::from(r.get::<_, String>(at)?.as_str()),
        id: r.get(at + 1)?,
        url: r.get(at + 2)?,
        token: r.get(at + 3)?,
        auth: scheme.map(|scheme| PushAuth {
            scheme,
            credentials,
        }),
        version: r.get(at + 6)?,
        created_at: Timestamp::from_millis(r.get(at + 7)?),
    })
}

/// Queue `items` of task `task` for webhook `config`.
fn queue(
    c: &Connection,
    task: &TaskId,
    config: &str,
    items: &[(PushItem, Task)],
    now: Timestamp,
) -> Result<(), StoreError> {
    let mut stmt = c.prepare_cached(
        "INSERT INTO push_deliveries (task_id, config_id, item, body, queue_position, created_at, due_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
    )?;
    for (item, snapshot) in items {
        stmt.execute(params![
            task.as_str(),
            config,
            item.as_str(),
            serde_json::to_string(snapshot)?,
            snapshot.queue_position,
            now.as_millis(),
        ])?;
    }
    Ok(())
}

/// Queue what the change from `before` to `after` pushes, for every webhook of the task.
/// Costs one indexed lookup when the task has none; says whether anything was queued.
pub(super) fn enqueue(
    c: &Connection,
    before: Option<&Task>,
    after: &Task,
    now: Timestamp,
) -> Result<bool, StoreError> {
    let mut stmt =
        c.prepare_cached("SELECT id FROM push_configs WHERE task_id = ?1 ORDER BY id")?;
    let configs = stmt
        .query_map([after.id.as_str()], |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    if configs.is_empty() {
        return Ok(false);
    }
    let items = push::items_for(before, after);
    for config in configs {
        queue(c, &after.id, &config, &items, now)?;
    }
    Ok(!items.is_empty())
}

/// Set (or replace, by id) a webhook of `task` and queue its first push, the task as it is.
pub(super) fn insert_config(
    c: &Connection,
    task: &Task,
    new: NewPushConfig,
    now: Timestamp,
) -> Result<PushConfig, StoreError> {
    let id = new
        .id
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let kept: i64 = c
        .prepare_cached("SELECT COUNT(*) FROM push_configs WHERE task_id = ?1 AND id != ?2")?
        .query_row(params![task.id.as_str(), id], |r| r.get(0))?;
    limits::push_config(&task.id, kept.unsigned_abs(), &load_settings(c)?.push)?;
    let (scheme, credentials) = match &new.auth {
        Some(a) => (Some(a.scheme.as_str()), a.credentials.as_deref()),
        None => (None, None),
    };
    c.prepare_cached(
        "INSERT INTO push_configs (task_id, id, url, token, auth_scheme, auth_credentials, version, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
         ON CONFLICT (task_id, id) DO UPDATE SET url = excluded.url, token = excluded.token, \
         auth_scheme = excluded.auth_scheme, auth_credentials = excluded.auth_credentials, \
         version = excluded.version",
    )?
    .execute(params![
        task.id.as_str(),
        id,
        new.url,
        new.token,
        scheme,
        credentials,
        new.version,
        now.as_millis()
    ])?;
    queue(c, &task.id, &id, &push::items_for(None, task), now)?;
    load_config(c, &task.id, &id)?.ok_or_else(|| StoreError::NoSuchTask(task.id.clone()))
}

fn load_config(c: &Connection, task: &TaskId, id: &str) -> Result<Option<PushConfig>, StoreError> {
    Ok(c.prepare_cached(&format!(
        "SELECT {CONFIG_COLUMNS} FROM push_configs WHERE task_id = ?1 AND id = ?2"
    ))?
    .query_row(params![task.as_str(), id], |r| config_from_row(r, 0))
    .optional()?)
}

impl Store {
    /// Set a webhook of task `task` (replacing the one with the same id), bounded by
    /// `push.configs_per_task`; its first push is the task as it is now.
    pub fn put_push_config(
        &self,
        task: &TaskId,
        new: NewPushConfig,
        now: Timestamp,
    ) -> Result<PushConfig, StoreError> {
        let task = task.clone();
        self.write(move |c| {
            let mut t = load_task(c, &task)?.ok_or_else(|| StoreError::NoSuchTask(task.clone()))?;
            super::counts::fill_positions(c, std::slice::from_mut(&mut t))?;
            insert_config(c, &t, new, now)
        })
    }

    pub fn push_config(&self, task: &TaskId, id: &str) -> Result<Option<PushConfig>, StoreError> {
        self.read(|c| load_config(c, task, id))
    }

    /// The webhooks of task `task`, oldest first.
    pub fn push_configs(&self, task: &TaskId) -> Result<Vec<PushConfig>, StoreError> {
        self.read(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {CONFIG_COLUMNS} FROM push_configs WHERE task_id = ?1 ORDER BY created_at, id"
            ))?;
            let rows = stmt.query_map([task.as_str()], |r| config_from_row(r, 0))?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }

    /// Delete a webhook and what is still queued for it; false when there was none.
    pub fn delete_push_config(&self, task: &TaskId, id: &str) -> Result<bool, StoreError> {
        let (task, id) = (task.clone(), id.to_owned());
        self.write(move |c| {
            Ok(c.execute(
                "DELETE FROM push_configs WHERE task_id = ?1 AND id = ?2",
                params![task.as_str(), id],
            )? > 0)
        })
    }

    /// The deliveries due at `now` that head their webhook's queue (a webhook gets its
    /// pushes in order: the next waits until the one before it is delivered or dropped),
    /// oldest first, at most `limit`.
    pub fn push_due(&self, now: Timestamp, limit: u32) -> Result<Vec<Delivery>, StoreError> {
        self.read(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT d.seq, d.item, d.body, d.queue_position, d.created_at, d.attempts, \
                 {} FROM push_deliveries d \
                 JOIN push_configs p ON p.task_id = d.task_id AND p.id = d.config_id \
                 WHERE d.seq IN (SELECT MIN(seq) FROM push_deliveries GROUP BY task_id, config_id) \
                 AND d.due_at <= ?1 ORDER BY d.seq LIMIT ?2",
                CONFIG_COLUMNS
                    .split(", ")
                    .map(|col| format!("p.{col}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))?;
            let rows = stmt.query_map(params![now.as_millis(), i64::from(limit)], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<u32>>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, u32>(5)?,
                    config_from_row(r, 6)?,
                ))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (seq, item, body, position, created, attempts, config) = row?;
                let mut task: Task = serde_json::from_str(&body)?;
                task.queue_position = position;
                out.push(Delivery {
                    seq,
                    config,
                    item: PushItem::parse(&item)
                        .ok_or_else(|| StoreError::Decode(format!("unknown push item {item:?}")))?,
                    task,
                    created_at: Timestamp::from_millis(created),
                    attempts,
                });
            }
            Ok(out)
        })
    }

    /// When the next queued delivery is due, if any is queued.
    pub fn push_next_due(&self) -> Result<Option<Timestamp>, StoreError> {
        self.read(|c| {
            // From the statement cache: the push loop asks after every change of any task.
            let at: Option<i64> = c
                .prepare_cached(
                    "SELECT MIN(due_at) FROM push_deliveries \
                     WHERE seq IN (SELECT MIN(seq) FROM push_deliveries GROUP BY task_id, config_id)",
                )?
                .query_row([], |r| r.get(0))?;
            Ok(at.map(Timestamp::from_millis))
        })
    }

    /// How many deliveries are queued.
    pub fn push_queued(&self) -> Result<u64, StoreError> {
        self.read(|c| {
            let n: i64 = c.query_row("SELECT COUNT(*) FROM push_deliveries", [], |r| r.get(0))?;
            Ok(n.unsigned_abs())
        })
    }

    /// Why each queued delivery that failed did, in queue order: its last attempt's error.
    pub fn push_errors(&self) -> Result<Vec<String>, StoreError> {
        self.read(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT last_error FROM push_deliveries WHERE last_error IS NOT NULL ORDER BY seq",
            )?;
            let errors = stmt
                .query_map([], |r| r.get(0))?
                .collect::<Result<Vec<String>, _>>()?;
            Ok(errors)
        })
    }

    /// Record an attempt at delivery `seq`: delivered (it leaves the queue), or failed with
    /// `error` (tried again later, or dropped once older than `push.give_up_after`).
    pub fn push_attempted(
        &self,
        seq: i64,
        outcome: Result<(), String>,
        now: Timestamp,
    ) -> Result<Attempted, StoreError> {
        self.write(move |c| {
            let row: Option<(i64, u32)> = c
                .prepare_cached("SELECT created_at, attempts FROM push_deliveries WHERE seq = ?1")?
                .query_row([seq], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?;
            let Some((created, attempts)) = row else {
                return Ok(Attempted::Gone);
            };
            let error = match outcome {
                Ok(()) => {
                    c.execute("DELETE FROM push_deliveries WHERE seq = ?1", [seq])?;
                    return Ok(Attempted::Delivered);
                }
                Err(e) => e,
            };
            let attempts = attempts.saturating_add(1);
            let settings = load_settings(c)?;
            let next = push::after_failure(
                Timestamp::from_millis(created),
                attempts,
                now,
                &settings.push,
            );
            match &next {
                Attempted::Retry { at } => {
                    c.execute(
                        "UPDATE push_deliveries SET attempts = ?2, due_at = ?3, last_error = ?4 WHERE seq = ?1",
                        params![seq, attempts, at.as_millis(), error],
                    )?;
                }
                _ => {
                    c.execute("DELETE FROM push_deliveries WHERE seq = ?1", [seq])?;
                }
            }
            Ok(next)
        })
    }
}
