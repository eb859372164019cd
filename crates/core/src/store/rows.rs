//! Row decoding shared by the tables: a stored task body (and a task read by its id), a desk
//! row, a desk name, and the optional-filter clause the listing queries are built from.

use std::path::PathBuf;

use rusqlite::{Connection, OptionalExtension};

use super::error::StoreError;
use super::reads;
use crate::clock::Timestamp;
use crate::desk::{Desk, DeskName};
use crate::task::{Task, TaskId};

/// One optional equality filter of a query, on parameter `?n`: `column = ?n` when the caller
/// gives a value, else a condition that holds (the parameter is bound to NULL). Written out
/// rather than as `(?n IS NULL OR column = ?n)`, which SQLite cannot answer from an index, so
/// a desk's or an asker's tasks are read from their index and not by walking the table.
pub(super) fn filter_on(column: &str, n: u8, given: bool) -> String {
    if given {
        format!("{column} = ?{n}")
    } else {
        format!("?{n} IS NULL")
    }
}

/// The columns [`desk_from_row`] reads, in its order.
pub(super) const DESK_COLUMNS: &str = "name, agent, dir, created_at, deliver_command, auto_launch";

/// A desk name as stored: a name that no longer parses is a damaged record.
pub(super) fn desk_name(name: String) -> Result<DeskName, StoreError> {
    name.parse()
        .map_err(|e: crate::desk::InvalidDeskName| StoreError::Decode(e.to_string()))
}

pub(super) fn desk_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Result<Desk, StoreError>> {
    let name: String = r.get(0)?;
    let agent: String = r.get(1)?;
    let dir: String = r.get(2)?;
    let created: i64 = r.get(3)?;
    let deliver_command: Option<String> = r.get(4)?;
    let auto_launch: bool = r.get(5)?;
    Ok((|| {
        Ok(Desk {
            name: desk_name(name)?,
            agent: agent
                .parse()
                .map_err(|e: crate::desk::UnknownAgentKind| StoreError::Decode(e.to_string()))?,
            dir: PathBuf::from(dir),
            deliver_command,
            auto_launch,
            created_at: Timestamp::from_millis(created),
        })
    })())
}

pub(super) fn decode_task(body: &str) -> Result<Task, StoreError> {
    reads::task_decoded();
    Ok(serde_json::from_str(body)?)
}

/// Task bodies as a query returns them, decoded.
pub(super) fn decode_tasks(
    rows: impl Iterator<Item = rusqlite::Result<String>>,
) -> Result<Vec<Task>, StoreError> {
    rows.map(|body| decode_task(&body?)).collect()
}

/// Task `id` as stored (by primary key).
pub(super) fn load_task(c: &Connection, id: &TaskId) -> Result<Option<Task>, StoreError> {
    let mut stmt = c.prepare_cached("SELECT body FROM tasks WHERE id = ?1")?;
    let body: Option<String> = stmt.query_row([id.as_str()], |r| r.get(0)).optional()?;
    body.map(|b| decode_task(&b)).transpose()
}
