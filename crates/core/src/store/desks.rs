//! The desks table: adding, changing and removing desks, and reading them (by name from memory
//! once read, see `cache`).

use std::path::PathBuf;

use rusqlite::{Connection, OptionalExtension, params};

use super::error::StoreError;
use super::open::Store;
use super::rows::{DESK_COLUMNS, desk_from_row, desk_name};
use crate::clock::Timestamp;
use crate::desk::{AgentKind, Desk, DeskName};

/// A desk to add.
#[derive(Debug, Clone)]
pub struct NewDesk {
    pub name: DeskName,
    pub agent: AgentKind,
    pub dir: PathBuf,
    /// See [`Desk::deliver_command`].
    pub deliver_command: Option<String>,
}

impl Store {
    pub fn add_desk(&self, desk: NewDesk, now: Timestamp) -> Result<Desk, StoreError> {
        self.desk_write(move |c| insert_desk(c, desk, now))
    }

    /// [`Store::write`] for a change that may touch a desk: the desk cache is emptied after
    /// it, whatever its outcome.
    pub(super) fn desk_write<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, StoreError> {
        let written = self.write(f);
        let mut cache = self.desk_cache();
        cache.generation = cache.generation.wrapping_add(1);
        cache.desks.clear();
        cache.auto_launch = None;
        written
    }

    /// Desk `name` if [`Store::desk`] has it in memory: never touches the database, so an
    /// async caller may ask without moving to a blocking thread.
    pub fn cached_desk(&self, name: &str) -> Option<Desk> {
        self.desk_cache().desks.get(name).cloned()
    }

    /// Set or clear the command that delivers text to a desk's agent.
    pub fn set_deliver_command(
        &self,
        name: &DeskName,
        command: Option<String>,
    ) -> Result<Desk, StoreError> {
        let name = name.clone();
        self.desk_write(move |c| {
            let changed = c.execute(
                "UPDATE desks SET deliver_command = ?2 WHERE name = ?1",
                params![name.as_str(), command],
            )?;
            if changed == 0 {
                return Err(StoreError::NoSuchDesk(name.to_string()));
            }
            load_desk(c, name.as_str())?.ok_or_else(|| StoreError::NoSuchDesk(name.to_string()))
        })
    }

    /// Turn a desk's launching by itself on or off.
    pub fn set_auto_launch(&self, name: &DeskName, on: bool) -> Result<Desk, StoreError> {
        let name = name.clone();
        self.desk_write(move |c| {
            let changed = c.execute(
                "UPDATE desks SET auto_launch = ?2 WHERE name = ?1",
                params![name.as_str(), on],
            )?;
            if changed == 0 {
                return Err(StoreError::NoSuchDesk(name.to_string()));
            }
            load_desk(c, name.as_str())?.ok_or_else(|| StoreError::NoSuchDesk(name.to_string()))
        })
    }

    /// Remove a desk that has no open tasks; its ended tasks stay until they are pruned.
    pub fn remove_desk(&self, name: &DeskName) -> Result<(), StoreError> {
        let name = name.clone();
        self.desk_write(move |c| {
            if load_desk(c, name.as_str())?.is_none() {
                return Err(StoreError::NoSuchDesk(name.to_string()));
            }
            let open: i64 = c.query_row(
                "SELECT COUNT(*) FROM tasks WHERE desk = ?1 AND ended_at IS NULL",
                [name.as_str()],
                |r| r.get(0),
            )?;
            if open > 0 {
                return Err(StoreError::DeskHasOpenTasks {
                    name,
                    open: open.unsigned_abs(),
                });
            }
            c.execute("DELETE FROM desks WHERE name = ?1", [name.as_str()])?;
            Ok(())
        })
    }

    pub fn desks(&self) -> Result<Vec<Desk>, StoreError> {
        self.read(|c| {
            let mut stmt =
                c.prepare_cached(&format!("SELECT {DESK_COLUMNS} FROM desks ORDER BY name"))?;
            let rows = stmt.query_map([], desk_from_row)?;
            rows.map(|r| r?).collect()
        })
    }

    /// The desks set to launch a session by themselves, from their index, kept in memory
    /// until a write of a desk (see [`super::cache::DeskCache`]).
    pub fn auto_launch_desks(&self) -> Result<Vec<Desk>, StoreError> {
        let generation = {
            let cache = self.desk_cache();
            if let Some(desks) = &cache.auto_launch {
                return Ok(desks.clone());
            }
            cache.generation
        };
        let desks: Vec<Desk> = self.read(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {DESK_COLUMNS} FROM desks WHERE auto_launch = 1 ORDER BY name"
            ))?;
            let rows = stmt.query_map([], desk_from_row)?;
            rows.map(|r| r?).collect()
        })?;
        let mut cache = self.desk_cache();
        if cache.generation == generation {
            cache.auto_launch = Some(desks.clone());
        }
        Ok(desks)
    }

    /// [`Store::auto_launch_desks`] if it is in memory: never touches the database (`None`:
    /// not read since the last write of a desk).
    pub fn cached_auto_launch_desks(&self) -> Option<Vec<Desk>> {
        self.desk_cache().auto_launch.clone()
    }

    /// The names of the desks that have a session or an open task, in name order (from the
    /// sessions' and open tasks' desk indexes): what a full watchdog pass walks, a few desks at
    /// a time, without loading every session and task at once.
    pub fn desks_in_use(&self) -> Result<Vec<DeskName>, StoreError> {
        self.read(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT desk FROM sessions UNION SELECT desk FROM tasks WHERE ended_at IS NULL \
                 ORDER BY 1",
            )?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
            rows.map(|name| desk_name(name?)).collect()
        })
    }

    /// Desk `name`, from memory once read (see [`super::cache::DeskCache`]).
    pub fn desk(&self, name: &str) -> Result<Option<Desk>, StoreError> {
        let generation = {
            let cache = self.desk_cache();
            if let Some(desk) = cache.desks.get(name) {
                return Ok(Some(desk.clone()));
            }
            cache.generation
        };
        let desk = self.read(|c| load_desk(c, name))?;
        if let Some(desk) = &desk {
            let mut cache = self.desk_cache();
            if cache.generation == generation {
                cache.desks.insert(name.to_owned(), desk.clone());
            }
        }
        Ok(desk)
    }
}

pub(super) fn insert_desk(
    c: &Connection,
    desk: NewDesk,
    now: Timestamp,
) -> Result<Desk, StoreError> {
    let exists: bool = c.query_row(
        "SELECT EXISTS(SELECT 1 FROM desks WHERE name = ?1)",
        [desk.name.as_str()],
        |r| r.get(0),
    )?;
    if exists {
        return Err(StoreError::DeskExists(desk.name));
    }
    c.execute(
        "INSERT INTO desks (name, agent, dir, created_at, deliver_command) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            desk.name.as_str(),
            desk.agent.as_str(),
            desk.dir.to_string_lossy(),
            now.as_millis(),
            desk.deliver_command,
        ],
    )?;
    Ok(Desk {
        name: desk.name,
        agent: desk.agent,
        dir: desk.dir,
        deliver_command: desk.deliver_command,
        auto_launch: false,
        created_at: now,
    })
}

pub(super) fn load_desk(c: &Connection, name: &str) -> Result<Option<Desk>, StoreError> {
    let mut stmt =
        c.prepare_cached(&format!("SELECT {DESK_COLUMNS} FROM desks WHERE name = ?1"))?;
    stmt.query_row([name], desk_from_row)
        .optional()?
        .transpose()
}
