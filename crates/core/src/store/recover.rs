//! The one way past a damaged write-ahead log, asked for by the owner (`taskkeeper doctor
//! --recover`): copy the database, its log and its index aside first, then let SQLite replay
//! what verifies and fold it into the database, and say how many committed transactions were
//! dropped. [`super::Store::open`] refuses such a log; nothing else ever drops work.

use std::fs::File;
use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::wal::{self, WalCheck};
use super::{StoreError, check_header, take_lock};
use crate::clock::Timestamp;

/// What [`recover`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovery {
    /// The log as it was found (`None`: there was none).
    pub found: Option<WalCheck>,
    /// The folder the files were copied into, and the copies; `None` when nothing was damaged
    /// and nothing was changed.
    pub aside: Option<(PathBuf, Vec<PathBuf>)>,
    /// SQLite's integrity check of the recovered database ("ok" when sound).
    pub integrity: String,
}

impl Recovery {
    /// Committed transactions the recovery dropped (those after the damage).
    pub fn dropped_transactions(&self) -> u64 {
        self.found.as_ref().map_or(0, |c| c.dropped_transactions)
    }
}

/// Where [`recover`] puts the damaged files: `damaged-<UTC time>` in the data directory.
pub fn aside_dir(data_dir: &Path, now: Timestamp) -> PathBuf {
    data_dir.join(format!(
        "damaged-{}",
        now.to_datetime().format("%Y%m%d-%H%M%S")
    ))
}

/// Recover the database at `db` from a damaged log: copy `db`, `-wal` and `-shm` into
/// `aside` (a new folder) and sync the copies, then replay the verified frames into the
/// database and empty the log. A log that is not damaged is left alone.
///
/// Refuses a database in use by another process and a main file that is not a database
/// (recovering the log cannot help there).
pub fn recover(db: &Path, aside: &Path) -> Result<Recovery, StoreError> {
    let open_err = |reason: String| StoreError::Open {
        path: db.to_owned(),
        reason,
    };
    let _lock = take_lock(db)?;
    check_header(db)?;
    let wal_file = wal::wal_path(db);
    let found = wal::check_files(db)
        .map_err(|e| open_err(format!("cannot read {}: {e}", wal_file.display())))?;
    if !found.as_ref().is_some_and(WalCheck::is_damaged) {
        return Ok(Recovery {
            found,
            aside: None,
            integrity: "ok".into(),
        });
    }

    std::fs::create_dir(aside)
        .map_err(|e| open_err(format!("cannot create {}: {e}", aside.display())))?;
    let mut copies = Vec::new();
    for file in [db.to_owned(), wal_file.clone(), wal::shm_path(db)] {
        if !file.exists() {
            continue;
        }
        let name = file
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_default();
        let copy = aside.join(name);
        std::fs::copy(&file, &copy)
            .and_then(|_| File::open(&copy)?.sync_all())
            .map_err(|e| {
                open_err(format!(
                    "cannot copy {} to {}: {e}",
                    file.display(),
                    copy.display()
                ))
            })?;
        copies.push(copy);
    }
    // The copies' names must survive a crash too before the originals change.
    File::open(aside)
        .and_then(|d| d.sync_all())
        .map_err(|e| open_err(format!("cannot sync {}: {e}", aside.display())))?;

    let conn = Connection::open(db).map_err(|e| open_err(e.to_string()))?;
    // SQLite rebuilds its index from the verified prefix; the checkpoint copies that into the
    // database and empties the log, so the damaged frames are gone (their copy is aside).
    let busy: i64 = conn
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
        .map_err(|e| open_err(format!("the checkpoint failed: {e}")))?;
    if busy != 0 {
        return Err(open_err(
            "the checkpoint could not finish (the database is busy)".into(),
        ));
    }
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .map_err(|e| open_err(format!("the integrity check failed: {e}")))?;
    drop(conn);
    Ok(Recovery {
        found,
        aside: Some((aside.to_owned(), copies)),
        integrity,
    })
}
