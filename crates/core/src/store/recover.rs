//! The one way past a damaged write-ahead log, asked for by the owner (`taskkeeper doctor
//! --recover`): copy the database, its log and its index aside first (into a folder only the
//! owner can read), then let SQLite replay what verifies and fold it into the database, and
//! say what was dropped: the committed transactions, and task by task the acknowledged tasks
//! whose writes are lost ([`lost_tasks`], also written into the folder). A transaction may
//! hold many tasks' writes (the store commits in groups), so only the tasks say what was lost.
//! [`super::Store::open`] refuses such a log; nothing else ever drops work.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::error::StoreError;
use super::open::{check_header, take_lock};
use super::wal::{self, WalCheck};
use crate::clock::Timestamp;
use crate::task::Task;

/// The file in the aside folder that lists the lost tasks.
pub const LOST_TASKS_FILE: &str = "lost-tasks.txt";

/// An acknowledged task whose committed writes a damaged log loses: created and lost whole,
/// or kept as it was before its lost changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostTask {
    pub id: String,
    pub asker: String,
    /// The first line of its request, as the asker wrote it (print it through
    /// [`crate::delivery::terminal_safe`], as [`LostTask::line`] does).
    pub request: String,
    /// Its state and version as last committed.
    pub committed: (String, u64),
    /// Its state and version as kept; `None` when the task itself is lost.
    pub kept: Option<(String, u64)>,
}

impl LostTask {
    /// The task in one line for the owner: id, asker, what is lost, the request's first
    /// line; nothing in it can drive a terminal.
    pub fn line(&self) -> String {
        let what = match &self.kept {
            None => format!("lost whole (was {})", self.committed.0),
            Some((state, version)) => format!(
                "kept as {state} (version {version}), was {} (version {})",
                self.committed.0, self.committed.1
            ),
        };
        let safe = |t: &str| crate::delivery::terminal_safe(t).replace('\n', " ");
        let mut request: String = safe(&self.request).chars().take(80).collect();
        if self.request.chars().count() > 80 {
            request.push('…');
        }
        format!(
            "{}  asker {}  {what}  \"{request}\"",
            safe(&self.id),
            safe(&self.asker)
        )
    }
}

/// What a damaged log loses, task by task.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lost {
    /// The acknowledged tasks whose committed writes are lost, by id.
    pub tasks: Vec<LostTask>,
    /// Why some of what is lost cannot be named (frames gone from the log, an image that
    /// cannot be read), when that is so: the list is then not the whole loss.
    pub unnamed: Option<String>,
}

impl Lost {
    /// The list as the aside folder keeps it: a line of counts, then a task a line.
    pub fn listing(&self) -> String {
        let mut out = format!(
            "{} acknowledged task(s) whose committed writes are lost\n",
            self.tasks.len()
        );
        if let Some(why) = &self.unnamed {
            out.push_str(&format!("not named: {why}\n"));
        }
        for t in &self.tasks {
            out.push_str(&t.line());
            out.push('\n');
        }
        out
    }
}

/// Name the tasks whose committed writes replaying `db`'s log would lose: the database as
/// SQLite would keep it and as it was committed ([`wal::images`]), each opened in memory,
/// compared task by task (a task missing from what is kept, or kept at an older version).
/// Reads the files only; `Lost::default()` when there is no log.
pub fn lost_tasks(db: &Path) -> Result<Lost, StoreError> {
    let open_err = |reason: String| StoreError::Open {
        path: db.to_owned(),
        reason,
    };
    let Some((check, images)) = wal::images(db)
        .map_err(|e| open_err(format!("cannot read {} and its log: {e}", db.display())))?
    else {
        return Ok(Lost::default());
    };
    let mut lost = Lost::default();
    let gone = check
        .index_committed_frames
        .map_or(0, |n| n.saturating_sub(check.frames));
    if gone > 0 {
        lost.unnamed = Some(format!(
            "{gone} committed frame(s) the -shm index knew are gone from the log; the tasks \
             they held cannot be named"
        ));
    } else if !images.damaged_pages.is_empty() {
        lost.unnamed = Some(format!(
            "the damaged frame(s) held the last committed version of {} page(s) of the \
             database; the tasks only they held cannot be named",
            images.damaged_pages.len()
        ));
    }
    let kept = match tasks_in(images.kept) {
        Ok(t) => t,
        Err(e) => {
            lost.unnamed = Some(format!("the database as kept cannot be read ({e})"));
            return Ok(lost);
        }
    };
    let committed = match tasks_in(images.committed) {
        Ok(t) => t,
        Err(e) => {
            lost.unnamed = Some(format!(
                "the database as committed cannot be read past the damage ({e})"
            ));
            return Ok(lost);
        }
    };
    for (id, (task, version)) in committed {
        let kept = kept.get(&id);
        if kept.is_some_and(|(_, v)| *v >= version) {
            continue;
        }
        lost.tasks.push(LostTask {
            request: task
                .request_text()
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned(),
            asker: task.asker.clone(),
            committed: (task.state().as_str().to_owned(), version),
            kept: kept.map(|(t, v)| (t.state().as_str().to_owned(), *v)),
            id,
        });
    }
    Ok(lost)
}

/// Every task in a database image, by id, with its version.
fn tasks_in(image: Vec<u8>) -> Result<BTreeMap<String, (Task, u64)>, String> {
    let mut conn = Connection::open_in_memory().map_err(|e| e.to_string())?;
    let len = image.len();
    conn.deserialize_read_exact(rusqlite::MAIN_DB, &image[..], len, true)
        .map_err(|e| e.to_string())?;
    let has_tasks: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'tasks')",
            [],
            |r| r.get(0),
        )
        .map_err(|e| e.to_string())?;
    let mut out = BTreeMap::new();
    if !has_tasks {
        return Ok(out);
    }
    let mut stmt = conn
        .prepare("SELECT id, version, body FROM tasks")
        .map_err(|e| e.to_string())?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
            ))
        })
        .map_err(|e| e.to_string())?;
    for row in rows {
        let (id, version, body) = row.map_err(|e| e.to_string())?;
        let task: Task =
            serde_json::from_str(&body).map_err(|e| format!("task {id} does not decode: {e}"))?;
        out.insert(id, (task, u64::try_from(version).unwrap_or(0)));
    }
    Ok(out)
}

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
    /// The acknowledged tasks whose writes the recovery dropped, also listed in the aside
    /// folder ([`LOST_TASKS_FILE`]).
    pub lost: Lost,
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

/// Recover the database at `db` from a damaged log: name the tasks it loses, copy `db`,
/// `-wal` and `-shm` into `aside` (a new folder, 0700) with the list of those tasks
/// ([`LOST_TASKS_FILE`], 0600) and sync them, then replay the verified frames into the
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
            lost: Lost::default(),
        });
    }
    // Named before anything changes: the damaged log is the only record of what it held.
    let lost = lost_tasks(db)?;

    private_dir(aside).map_err(|e| open_err(format!("cannot create {}: {e}", aside.display())))?;
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
    let list = aside.join(LOST_TASKS_FILE);
    write_private(&list, lost.listing().as_bytes())
        .map_err(|e| open_err(format!("cannot write {}: {e}", list.display())))?;
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
        lost,
    })
}

/// A new folder only the owner can read (0700: the copies hold every task's text).
fn private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Write a new file only the owner can read (0600), synced.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}
