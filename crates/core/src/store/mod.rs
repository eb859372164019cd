//! The durable store: SQLite (bundled), WAL, `synchronous=FULL` by default, one writer thread
//! with group commit ([`writer`]), a small pool of read connections, versioned migrations
//! ([`schema`]) and a lock file so only one process uses a database.
//!
//! The store is the only writer of state. Every change to a task goes through
//! [`Store::apply`] (or [`Store::submit`] for a new one), which loads the task, asks
//! [`transition::apply`] for the next version, writes it over the version it read, and lets
//! the desk's queue move on ([`queue::next_to_start`]) in the same transaction. A call returns
//! only after the commit that made its change durable.

mod push;
mod reads;
mod recover;
mod schema;
pub mod wal;
mod writer;

pub use reads::Reads;
pub use recover::{LOST_TASKS_FILE, Lost, LostTask, Recovery, aside_dir, lost_tasks, recover};

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use crate::clock::Timestamp;
use crate::desk::{AgentKind, Desk, DeskName};
use crate::limits::{self, LimitExceeded};
use crate::queue;
use crate::session::{Session, SessionId};
use crate::settings::{SettingError, Settings};
use crate::task::{NewTask, Task, TaskId, TaskState};
use crate::transition::{self, Event, TransitionError};

/// How hard a commit tries to reach the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Synchronous {
    /// Every commit is synced: an answered change survives power loss (the default).
    Full,
    /// Synced at checkpoints only: survives a crash of the process, not of the machine.
    Normal,
}

#[derive(Debug, Clone)]
pub struct StoreOptions {
    pub synchronous: Synchronous,
    /// Read connections, opened as needed up to this many and kept for reuse; a read that
    /// finds them all busy waits for one (at least one is allowed).
    pub readers: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            synchronous: Synchronous::Full,
            readers: 4,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the task database {path}: {reason}")]
    Open { path: PathBuf, reason: String },
    #[error(
        "{path} is not a Taskkeeper database or is damaged ({detail}); it was left untouched: move it aside to start with an empty one, or restore a backup"
    )]
    Corrupt { path: PathBuf, detail: String },
    #[error(
        "the write-ahead log {wal} of {path} is damaged: {detail}. Taskkeeper did not start, so nothing was dropped, and left {path}, {wal} and {shm} untouched. `taskkeeper doctor` shows what verifies and names the tasks whose writes would be lost; `taskkeeper doctor --recover` copies the three files aside, keeps what verifies and names the tasks it dropped"
    )]
    WalDamaged {
        path: PathBuf,
        wal: PathBuf,
        shm: PathBuf,
        detail: String,
    },
    #[error(
        "{path} was written by a newer Taskkeeper (schema version {found}, this one knows up to {known}); upgrade Taskkeeper"
    )]
    TooNew {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error(
        "another Taskkeeper is already using {path}; stop it first, or give this one another data directory"
    )]
    Locked { path: PathBuf },
    #[error("no desk named {0}; `taskkeeper desk list` shows the desks")]
    NoSuchDesk(String),
    #[error("a desk named {0} already exists")]
    DeskExists(DeskName),
    #[error("desk {name} still has {open} open task(s); finish or cancel them before removing it")]
    DeskHasOpenTasks { name: DeskName, open: u64 },
    #[error("no task {0}")]
    NoSuchTask(TaskId),
    #[error("no session {0}; it attaches on its first hook")]
    NoSuchSession(String),
    #[error("an asker named {0} already exists (or the name is reserved)")]
    AskerExists(String),
    #[error("no asker named {0}; `taskkeeper asker list` shows the askers")]
    NoSuchAsker(String),
    #[error(
        "invalid asker name {0:?}: use 1-64 lower-case letters, digits, '-' or '_', starting with a letter or digit"
    )]
    InvalidAskerName(String),
    #[error(transparent)]
    Transition(#[from] TransitionError),
    #[error("task {0} was changed by someone else at the same moment; try again")]
    Conflict(TaskId),
    #[error(transparent)]
    Setting(#[from] SettingError),
    #[error(transparent)]
    Limit(#[from] LimitExceeded),
    #[error("database error: {0}")]
    Sqlite(String),
    #[error("a stored record could not be read: {0}")]
    Decode(String),
    #[error("the store has shut down")]
    Closed,
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Sqlite(e.to_string())
    }
}

impl From<serde_json::Error> for StoreError {
    fn from(e: serde_json::Error) -> Self {
        StoreError::Decode(e.to_string())
    }
}

/// What a desk holds of open work ([`Store::desk_loads`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeskLoad {
    pub open_tasks: usize,
    /// A queued task, or one that holds the desk: work a session would take.
    pub has_work: bool,
}

/// A desk to add.
#[derive(Debug, Clone)]
pub struct NewDesk {
    pub name: DeskName,
    pub agent: AgentKind,
    pub dir: PathBuf,
    /// See [`Desk::deliver_command`].
    pub deliver_command: Option<String>,
}

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

/// An agent allowed to give tasks, known by the hash of its token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asker {
    pub name: String,
    pub token_hash: String,
    pub created_at: Timestamp,
}

/// Asker names follow the desk-name rule (they appear in listings and logs), and `owner` is
/// taken.
fn validate_asker_name(name: &str) -> Result<(), StoreError> {
    if name == crate::asker::OWNER {
        return Err(StoreError::AskerExists(name.to_owned()));
    }
    name.parse::<DeskName>()
        .map(drop)
        .map_err(|_| StoreError::InvalidAskerName(name.to_owned()))
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

/// The task database. Cheap to clone; all clones share one writer thread.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.inner.path)
            .finish()
    }
}

struct Inner {
    path: PathBuf,
    options: StoreOptions,
    writer: Mutex<Option<mpsc::Sender<writer::Job>>>,
    writer_thread: Mutex<Option<thread::JoinHandle<()>>>,
    readers: Mutex<Readers>,
    /// Told when a read connection goes back to the pool.
    reader_back: std::sync::Condvar,
    /// Set by [`Store::close`]: reads are refused too.
    closed: std::sync::atomic::AtomicBool,
    /// What the store has read, for tests that pin a cost by counting.
    reads: Arc<reads::Totals>,
    /// The settings as last read, for [`Store::settings`].
    settings: Mutex<SettingsCache>,
    /// Desks as last read, for [`Store::desk`].
    desks: Mutex<DeskCache>,
    /// Held for the store's life: the OS drops the lock if the process dies.
    _lock: File,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Closing the channel ends the writer after it has committed what is queued.
        self.writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(h) = self
            .writer_thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            let _ = h.join();
        }
    }
}

/// The read connections: those idle, and how many are open (idle or in use).
#[derive(Default)]
struct Readers {
    idle: Vec<Connection>,
    open: usize,
}

/// The settings as last read from the table, so that the many callers of
/// [`Store::settings`] (every A2A call asks for the limits) do not each read and parse the
/// table. Only this process writes the database (the lock file), and only
/// [`Store::set_setting`] writes settings: it empties the cache after its commit and moves
/// the generation on, so a read that began before the commit cannot put back what it read.
#[derive(Debug, Default)]
struct SettingsCache {
    generation: u64,
    settings: Option<Settings>,
}

/// Desks as last read by name, so that the desk every A2A call names is looked up in memory
/// (the same reasoning as [`SettingsCache`]): every write of a desk ([`Store::desk_write`])
/// empties it after its commit and moves the generation on. Only desks that exist are kept.
#[derive(Debug, Default)]
struct DeskCache {
    generation: u64,
    desks: std::collections::HashMap<String, Desk>,
    /// The desks set to launch by themselves, as [`Store::auto_launch_desks`] last read
    /// them, so the auto-launch loop can tell from memory whether a change concerns it.
    auto_launch: Option<Vec<Desk>>,
}

const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

impl Store {
    /// Open (or create) the database at `path`.
    ///
    /// Refuses, without touching the file: a file that is not a SQLite database or fails its
    /// quick check, a database from a newer Taskkeeper, and a database another process holds.
    pub fn open(path: &Path, options: StoreOptions) -> Result<Store, StoreError> {
        let open_err = |reason: String| StoreError::Open {
            path: path.to_owned(),
            reason,
        };
        let lock = take_lock(path)?;

        check_header(path)?;
        check_wal(path)?;
        let conn = Connection::open(path).map_err(|e| open_err(e.to_string()))?;
        let corrupt = |detail: String| StoreError::Corrupt {
            path: path.to_owned(),
            detail,
        };
        let check: String = conn
            .query_row("PRAGMA quick_check", [], |r| r.get(0))
            .map_err(|e| corrupt(e.to_string()))?;
        if check != "ok" {
            return Err(corrupt(check));
        }
        let found: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| corrupt(e.to_string()))?;
        if found > schema::LATEST {
            return Err(StoreError::TooNew {
                path: path.to_owned(),
                found,
                known: schema::LATEST,
            });
        }

        let mut conn = conn;
        configure(&conn, options.synchronous, false).map_err(|e| open_err(e.to_string()))?;
        schema::migrations()
            .to_latest(&mut conn)
            .map_err(|e| open_err(format!("migration failed: {e}")))?;
        reads::count_statements(&conn);

        let (tx, handle) = writer::spawn(conn)
            .map_err(|e| open_err(format!("cannot start the writer thread: {e}")))?;
        Ok(Store {
            inner: Arc::new(Inner {
                path: path.to_owned(),
                options,
                writer: Mutex::new(Some(tx)),
                writer_thread: Mutex::new(Some(handle)),
                readers: Mutex::default(),
                reader_back: std::sync::Condvar::new(),
                closed: std::sync::atomic::AtomicBool::new(false),
                reads: Arc::default(),
                settings: Mutex::default(),
                desks: Mutex::default(),
                _lock: lock,
            }),
        })
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// What this store has read since it was opened: statements run and tasks decoded.
    /// Tests take it before and after a call to pin what the call costs.
    pub fn reads(&self) -> Reads {
        self.inner.reads.now()
    }

    /// Finish the queued writes, stop the writer and release the database for another
    /// process, even while clones of this store are still held somewhere (they get
    /// [`StoreError::Closed`] from then on).
    pub fn close(&self) {
        self.inner
            .writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(h) = self
            .inner
            .writer_thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            let _ = h.join();
        }
        {
            let mut pool = self.readers();
            self.inner
                .closed
                .store(true, std::sync::atomic::Ordering::SeqCst);
            let idle = pool.idle.len();
            pool.idle.clear();
            pool.open = pool.open.saturating_sub(idle);
        }
        self.inner.reader_back.notify_all();
        let _ = self.inner._lock.unlock();
    }

    // ---- plumbing -------------------------------------------------------------------

    fn read<R>(
        &self,
        f: impl FnOnce(&Connection) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        let conn = self.take_reader()?;
        let result = self.inner.reads.counting(|| f(&conn));
        let mut pool = self.readers();
        if self.inner.closed.load(std::sync::atomic::Ordering::SeqCst) {
            pool.open = pool.open.saturating_sub(1);
        } else {
            pool.idle.push(conn);
        }
        drop(pool);
        self.inner.reader_back.notify_one();
        result
    }

    /// [`Store::read`] only if a read connection is idle now: never waits for one and never
    /// opens one, so a caller on an async worker can read without blocking it on the pool
    /// (`None`: none was idle; read through the pool instead).
    fn try_read<R>(
        &self,
        f: impl FnOnce(&Connection) -> Result<R, StoreError>,
    ) -> Option<Result<R, StoreError>> {
        let conn = {
            let mut pool = self.readers();
            if self.inner.closed.load(std::sync::atomic::Ordering::SeqCst) {
                return Some(Err(StoreError::Closed));
            }
            pool.idle.pop()?
        };
        let result = self.inner.reads.counting(|| f(&conn));
        let mut pool = self.readers();
        if self.inner.closed.load(std::sync::atomic::Ordering::SeqCst) {
            pool.open = pool.open.saturating_sub(1);
        } else {
            pool.idle.push(conn);
        }
        drop(pool);
        self.inner.reader_back.notify_one();
        Some(result)
    }

    fn readers(&self) -> std::sync::MutexGuard<'_, Readers> {
        self.inner
            .readers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// A read connection: an idle one, else a new one while fewer than
    /// [`StoreOptions::readers`] are open, else the next one given back. Waiting beats
    /// opening one more: a new connection parses the whole schema before its first query,
    /// and under many concurrent calls on two cores a pool that opened and dropped its extras
    /// did that on most reads.
    fn take_reader(&self) -> Result<Connection, StoreError> {
        let most = self.inner.options.readers.max(1);
        let mut pool = self.readers();
        loop {
            if self.inner.closed.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(StoreError::Closed);
            }
            if let Some(c) = pool.idle.pop() {
                return Ok(c);
            }
            if pool.open < most {
                pool.open += 1;
                drop(pool);
                let opened = self.open_reader();
                if opened.is_err() {
                    self.readers().open -= 1;
                    self.inner.reader_back.notify_one();
                }
                return opened;
            }
            pool = self
                .inner
                .reader_back
                .wait(pool)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn open_reader(&self) -> Result<Connection, StoreError> {
        let c = Connection::open_with_flags(
            &self.inner.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_URI,
        )?;
        configure(&c, self.inner.options.synchronous, true)?;
        reads::count_statements(&c);
        self.inner.reads.connection_opened();
        Ok(c)
    }

    /// Run `f` in the writer's next group commit and wait for that commit.
    fn write<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, StoreError> {
        let (tx, rx) = mpsc::sync_channel::<Result<R, StoreError>>(1);
        self.write_then(f, move |result| {
            let _ = tx.send(result);
        });
        rx.recv().map_err(|_| StoreError::Closed)?
    }

    /// Run `f` in the writer's next group commit and hand its outcome to `done` once that
    /// commit is durable (or refused). Returns at once: `done` runs on the writer thread, so
    /// it must only pass the outcome on (an async caller's channel), never block.
    fn write_then<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<R, StoreError> + Send + 'static,
        done: impl FnOnce(Result<R, StoreError>) + Send + 'static,
    ) {
        let totals = Arc::clone(&self.inner.reads);
        let job: writer::Job = Box::new(move |conn| {
            let result = totals.counting(|| conn.and_then(f));
            let keep = result.is_ok();
            let reply: writer::Reply = Box::new(move |commit| done(commit.and(result)));
            (keep, reply)
        });
        let sender = self
            .inner
            .writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match sender {
            Some(sender) => {
                if let Err(mpsc::SendError(job)) = sender.send(job) {
                    let (_, reply) = job(Err(StoreError::Closed));
                    reply(Err(StoreError::Closed));
                }
            }
            None => {
                let (_, reply) = job(Err(StoreError::Closed));
                reply(Err(StoreError::Closed));
            }
        }
    }

    // ---- desks ----------------------------------------------------------------------

    pub fn add_desk(&self, desk: NewDesk, now: Timestamp) -> Result<Desk, StoreError> {
        self.desk_write(move |c| insert_desk(c, desk, now))
    }

    /// [`Store::write`] for a change that may touch a desk: the desk cache is emptied after
    /// it, whatever its outcome.
    fn desk_write<R: Send + 'static>(
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

    fn desk_cache(&self) -> std::sync::MutexGuard<'_, DeskCache> {
        self.inner
            .desks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
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

    // ---- marks ----------------------------------------------------------------------

    /// A named time the daemon keeps (`digest::TAKEN`, `digest::OFFERED`).
    pub fn mark(&self, name: &str) -> Result<Option<Timestamp>, StoreError> {
        let name = name.to_owned();
        self.read(move |c| {
            Ok(
                c.query_row("SELECT at FROM marks WHERE name = ?1", [name], |r| {
                    r.get::<_, i64>(0)
                })
                .optional()?
                .map(Timestamp::from_millis),
            )
        })
    }

    pub fn set_mark(&self, name: &str, at: Timestamp) -> Result<(), StoreError> {
        let name = name.to_owned();
        self.write(move |c| {
            c.execute(
                "INSERT INTO marks (name, at) VALUES (?1, ?2) \
                 ON CONFLICT (name) DO UPDATE SET at = excluded.at",
                params![name, at.as_millis()],
            )?;
            Ok(())
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
    /// until a write of a desk (see [`DeskCache`]).
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

    /// Desk `name`, from memory once read (see [`DeskCache`]).
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

    // ---- tasks ----------------------------------------------------------------------

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

    // ---- sessions -------------------------------------------------------------------

    /// Insert or replace a session (the adapters fold edges in and write the result).
    pub fn put_session(&self, session: Session) -> Result<Session, StoreError> {
        self.write(move |c| {
            if load_desk(c, session.desk.as_str())?.is_none() {
                return Err(StoreError::NoSuchDesk(session.desk.to_string()));
            }
            let body = serde_json::to_string(&session)?;
            c.prepare_cached(
                "INSERT INTO sessions (id, desk, body, updated_at) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (id) DO UPDATE SET desk = excluded.desk, body = excluded.body, \
                 updated_at = excluded.updated_at",
            )?
            .execute(params![
                session.id.as_str(),
                session.desk.as_str(),
                body,
                session.updated_at.as_millis()
            ])?;
            Ok(session)
        })
    }

    /// Take in a session seen for the first time, with the desk it asked for (`new_desk`)
    /// created in the same step. Both are bounded: a desk only while there are fewer than
    /// `sessions.create_desks_max`, and a session only while fewer than `sessions.max` are
    /// kept, or by taking the place of the oldest ended one (see [`limits::session_room`]).
    /// A refusal changes nothing. A session that is already there (its first hooks raced)
    /// is returned as it is.
    pub fn add_session(
        &self,
        session: Session,
        new_desk: Option<NewDesk>,
        now: Timestamp,
    ) -> Result<Session, StoreError> {
        self.desk_write(move |c| {
            let mut stmt = c.prepare_cached("SELECT body FROM sessions WHERE id = ?1")?;
            let body: Option<String> = stmt
                .query_row([session.id.as_str()], |r| r.get(0))
                .optional()?;
            if let Some(body) = body {
                return Ok(serde_json::from_str(&body)?);
            }
            let settings = load_settings(c)?;
            if let Some(desk) = new_desk {
                match load_desk(c, desk.name.as_str())? {
                    // Another session made the same desk a moment ago.
                    Some(d) if d.dir == desk.dir => {}
                    Some(_) => return Err(StoreError::DeskExists(desk.name)),
                    None => {
                        let desks: i64 =
                            c.query_row("SELECT COUNT(*) FROM desks", [], |r| r.get(0))?;
                        limits::desk_from_session(desks.unsigned_abs(), &settings.limits)?;
                        insert_desk(c, desk, now)?;
                    }
                }
            }
            if load_desk(c, session.desk.as_str())?.is_none() {
                return Err(StoreError::NoSuchDesk(session.desk.to_string()));
            }
            let kept: i64 = c.query_row("SELECT COUNT(*) FROM sessions", [], |r| r.get(0))?;
            let oldest_ended: Option<String> = c
                .prepare_cached(
                    "SELECT id FROM sessions WHERE json_extract(body, '$.activity') = 'ended' \
                     ORDER BY updated_at, id LIMIT 1",
                )?
                .query_row([], |r| r.get(0))
                .optional()?;
            let oldest_ended = oldest_ended.map(SessionId::from);
            if let Some(gone) =
                limits::session_room(kept.unsigned_abs(), oldest_ended, &settings.limits)?
            {
                c.execute("DELETE FROM sessions WHERE id = ?1", [gone.as_str()])?;
            }
            let body = serde_json::to_string(&session)?;
            c.prepare_cached(
                "INSERT INTO sessions (id, desk, body, updated_at) VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![
                session.id.as_str(),
                session.desk.as_str(),
                body,
                session.updated_at.as_millis()
            ])?;
            Ok(session)
        })
    }

    /// Delete sessions that ended and have not changed for more than `keep` before `now`;
    /// returns how many.
    pub fn prune_ended_sessions(
        &self,
        now: Timestamp,
        keep: Duration,
    ) -> Result<usize, StoreError> {
        let cutoff = now.minus(keep).as_millis();
        self.write(move |c| {
            Ok(c.execute(
                "DELETE FROM sessions WHERE json_extract(body, '$.activity') = 'ended' \
                 AND updated_at < ?1",
                [cutoff],
            )?)
        })
    }

    /// When the oldest ended session is due to be pruned, if any session has ended.
    pub fn next_session_prune_at(&self, keep: Duration) -> Result<Option<Timestamp>, StoreError> {
        self.read(|c| {
            let oldest: Option<i64> = c.query_row(
                "SELECT MIN(updated_at) FROM sessions WHERE json_extract(body, '$.activity') = 'ended'",
                [],
                |r| r.get(0),
            )?;
            Ok(oldest.map(|t| Timestamp::from_millis(t).plus(keep)))
        })
    }

    /// Change a session in one step: read, `change`, write, inside one write transaction,
    /// so concurrent hooks (a Stop and the waiter it starts) never write back a stale copy.
    /// `change` returns whether it changed anything; an unchanged session is not written.
    pub fn update_session<R: Send + 'static>(
        &self,
        id: &SessionId,
        change: impl FnOnce(&mut Session) -> (bool, R) + Send + 'static,
    ) -> Result<Option<(Session, R)>, StoreError> {
        let id = id.clone();
        self.write(move |c| {
            let mut stmt = c.prepare_cached("SELECT body FROM sessions WHERE id = ?1")?;
            let body: Option<String> = stmt.query_row([id.as_str()], |r| r.get(0)).optional()?;
            let Some(body) = body else { return Ok(None) };
            let mut session: Session = serde_json::from_str(&body)?;
            let (changed, out) = change(&mut session);
            if changed {
                let body = serde_json::to_string(&session)?;
                c.prepare_cached(
                    "UPDATE sessions SET desk = ?2, body = ?3, updated_at = ?4 WHERE id = ?1",
                )?
                .execute(params![
                    id.as_str(),
                    session.desk.as_str(),
                    body,
                    session.updated_at.as_millis()
                ])?;
            }
            Ok(Some((session, out)))
        })
    }

    pub fn session(&self, id: &SessionId) -> Result<Option<Session>, StoreError> {
        self.read(|c| {
            let mut stmt = c.prepare_cached("SELECT body FROM sessions WHERE id = ?1")?;
            let body: Option<String> = stmt.query_row([id.as_str()], |r| r.get(0)).optional()?;
            Ok(body.map(|b| serde_json::from_str(&b)).transpose()?)
        })
    }

    /// Sessions, most recently changed first; `desk` narrows to one desk.
    pub fn sessions(&self, desk: Option<&DeskName>) -> Result<Vec<Session>, StoreError> {
        self.read(|c| {
            let mut stmt = c.prepare_cached(&sessions_sql(desk.is_some()))?;
            let rows = stmt.query_map([desk.map(DeskName::as_str)], |r| r.get::<_, String>(0))?;
            let mut out = Vec::new();
            for body in rows {
                out.push(serde_json::from_str(&body?)?);
            }
            Ok(out)
        })
    }

    // ---- askers ---------------------------------------------------------------------

    /// Register an asker by the hash of its token.
    pub fn add_asker(
        &self,
        name: &str,
        token_hash: &str,
        now: Timestamp,
    ) -> Result<Asker, StoreError> {
        validate_asker_name(name)?;
        let (name, hash) = (name.to_owned(), token_hash.to_owned());
        self.write(move |c| {
            let exists: bool = c.query_row(
                "SELECT EXISTS(SELECT 1 FROM askers WHERE name = ?1)",
                [&name],
                |r| r.get(0),
            )?;
            if exists {
                return Err(StoreError::AskerExists(name));
            }
            c.execute(
                "INSERT INTO askers (name, token_hash, created_at) VALUES (?1, ?2, ?3)",
                params![name, hash, now.as_millis()],
            )?;
            Ok(Asker {
                name,
                token_hash: hash,
                created_at: now,
            })
        })
    }

    pub fn remove_asker(&self, name: &str) -> Result<(), StoreError> {
        let name = name.to_owned();
        self.write(
            move |c| match c.execute("DELETE FROM askers WHERE name = ?1", [&name])? {
                0 => Err(StoreError::NoSuchAsker(name)),
                _ => Ok(()),
            },
        )
    }

    pub fn askers(&self) -> Result<Vec<Asker>, StoreError> {
        self.read(|c| {
            let mut stmt =
                c.prepare_cached("SELECT name, token_hash, created_at FROM askers ORDER BY name")?;
            let rows = stmt.query_map([], |r| {
                Ok(Asker {
                    name: r.get(0)?,
                    token_hash: r.get(1)?,
                    created_at: Timestamp::from_millis(r.get(2)?),
                })
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
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

    // ---- settings -------------------------------------------------------------------

    /// The settings: the defaults overlaid with what the owner changed. Read from the table
    /// once, then from memory until a setting changes ([`SettingsCache`]).
    pub fn settings(&self) -> Result<Settings, StoreError> {
        let generation = {
            let cache = self.settings_cache();
            if let Some(settings) = &cache.settings {
                return Ok(settings.clone());
            }
            cache.generation
        };
        let settings = self.read(load_settings)?;
        let mut cache = self.settings_cache();
        if cache.generation == generation {
            cache.settings = Some(settings.clone());
        }
        Ok(settings)
    }

    /// The settings if [`Store::settings`] has them in memory: never touches the database,
    /// so an async caller may ask without moving to a blocking thread.
    pub fn cached_settings(&self) -> Option<Settings> {
        self.settings_cache().settings.clone()
    }

    fn settings_cache(&self) -> std::sync::MutexGuard<'_, SettingsCache> {
        self.inner
            .settings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Change one setting; an invalid value is refused and nothing is written.
    pub fn set_setting(&self, key: &str, value: &str) -> Result<Settings, StoreError> {
        let written = self.set_setting_uncached(key, value);
        // Whatever the outcome: the next read goes to the table.
        let mut cache = self.settings_cache();
        cache.generation = cache.generation.wrapping_add(1);
        cache.settings = None;
        written
    }

    fn set_setting_uncached(&self, key: &str, value: &str) -> Result<Settings, StoreError> {
        let (key, value) = (key.to_owned(), value.to_owned());
        self.write(move |c| {
            let mut settings = load_settings(c)?;
            settings.set(&key, &value)?;
            let canonical = settings.get(&key)?;
            c.execute(
                "INSERT INTO settings (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                params![key, canonical],
            )?;
            Ok(settings)
        })
    }

    // ---- checks ---------------------------------------------------------------------

    /// SQLite's full integrity check; `Ok("ok")` when the file is sound.
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        self.read(|c| Ok(c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?))
    }
}

/// The lock file beside the database.
pub fn lock_path(db: &Path) -> PathBuf {
    let mut name = db.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".lock");
    db.with_file_name(name)
}

/// Take the database's lock file, or say who holds it.
fn take_lock(path: &Path) -> Result<File, StoreError> {
    let open_err = |reason: String| StoreError::Open {
        path: path.to_owned(),
        reason,
    };
    let lock_path = lock_path(path);
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| {
            open_err(format!(
                "cannot create the lock file {}: {e}",
                lock_path.display()
            ))
        })?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(StoreError::Locked {
                path: path.to_owned(),
            });
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(open_err(format!(
                "cannot lock {}: {e}",
                lock_path.display()
            )));
        }
    }
    Ok(lock)
}

/// Refuse a write-ahead log whose replay would drop committed work ([`wal`]), before SQLite
/// reads (and then reuses) it.
fn check_wal(path: &Path) -> Result<(), StoreError> {
    let wal = wal::wal_path(path);
    let check = wal::check_files(path).map_err(|e| StoreError::Open {
        path: path.to_owned(),
        reason: format!("cannot read {}: {e}", wal.display()),
    })?;
    match check {
        Some(check) if check.is_damaged() => Err(StoreError::WalDamaged {
            path: path.to_owned(),
            shm: wal::shm_path(path),
            wal,
            detail: check.damage(),
        }),
        _ => Ok(()),
    }
}

/// Refuse a file that is not empty and does not start with SQLite's header, before SQLite
/// gets a chance to open (and possibly write) it.
fn check_header(path: &Path) -> Result<(), StoreError> {
    let corrupt = |detail: String| StoreError::Corrupt {
        path: path.to_owned(),
        detail,
    };
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(StoreError::Open {
                path: path.to_owned(),
                reason: e.to_string(),
            });
        }
    };
    let mut header = [0u8; 16];
    let mut read = 0;
    while read < header.len() {
        match file.read(&mut header[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(e) => {
                return Err(StoreError::Open {
                    path: path.to_owned(),
                    reason: e.to_string(),
                });
            }
        }
    }
    match read {
        0 => Ok(()),
        16 if &header == SQLITE_HEADER => Ok(()),
        _ => Err(corrupt("it does not start with the SQLite header".into())),
    }
}

fn configure(c: &Connection, sync: Synchronous, read_only: bool) -> rusqlite::Result<()> {
    c.busy_timeout(Duration::from_secs(5))?;
    let sync = match sync {
        Synchronous::Full => "FULL",
        Synchronous::Normal => "NORMAL",
    };
    if read_only {
        return c.execute_batch("PRAGMA query_only = ON;");
    }
    c.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))?;
    c.execute_batch(&format!(
        "PRAGMA synchronous = {sync}; PRAGMA foreign_keys = ON; PRAGMA journal_size_limit = 67108864;"
    ))?;
    // macOS's fsync does not flush the drive's cache; F_FULLFSYNC does (reliability.md §3).
    #[cfg(target_os = "macos")]
    c.execute_batch("PRAGMA fullfsync = ON; PRAGMA checkpoint_fullfsync = ON;")?;
    Ok(())
}

/// One optional equality filter of a query, on parameter `?n`: `column = ?n` when the caller
/// gives a value, else a condition that holds (the parameter is bound to NULL). Written out
/// rather than as `(?n IS NULL OR column = ?n)`, which SQLite cannot answer from an index, so
/// a desk's or an asker's tasks are read from their index and not by walking the table.
fn filter_on(column: &str, n: u8, given: bool) -> String {
    if given {
        format!("{column} = ?{n}")
    } else {
        format!("?{n} IS NULL")
    }
}

/// [`Store::tasks`]'s query: `?1` the desk, `?2` the asker, `?3` the limit.
fn tasks_sql(filter: &TaskFilter) -> String {
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

/// [`Store::sessions`]'s query: `?1` the desk.
fn sessions_sql(desk_given: bool) -> String {
    format!(
        "SELECT body FROM sessions WHERE {} ORDER BY updated_at DESC, id",
        filter_on("desk", 1, desk_given)
    )
}

/// The columns [`desk_from_row`] reads, in its order.
const DESK_COLUMNS: &str = "name, agent, dir, created_at, deliver_command, auto_launch";

/// A desk name as stored: a name that no longer parses is a damaged record.
fn desk_name(name: String) -> Result<DeskName, StoreError> {
    name.parse()
        .map_err(|e: crate::desk::InvalidDeskName| StoreError::Decode(e.to_string()))
}

fn desk_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Result<Desk, StoreError>> {
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

fn insert_desk(c: &Connection, desk: NewDesk, now: Timestamp) -> Result<Desk, StoreError> {
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

fn load_desk(c: &Connection, name: &str) -> Result<Option<Desk>, StoreError> {
    let mut stmt =
        c.prepare_cached(&format!("SELECT {DESK_COLUMNS} FROM desks WHERE name = ?1"))?;
    stmt.query_row([name], desk_from_row)
        .optional()?
        .transpose()
}

fn decode_task(body: &str) -> Result<Task, StoreError> {
    reads::task_decoded();
    Ok(serde_json::from_str(body)?)
}

fn load_task(c: &Connection, id: &TaskId) -> Result<Option<Task>, StoreError> {
    let mut stmt = c.prepare_cached("SELECT body FROM tasks WHERE id = ?1")?;
    let body: Option<String> = stmt.query_row([id.as_str()], |r| r.get(0)).optional()?;
    body.map(|b| decode_task(&b)).transpose()
}

fn load_task_by_request(
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

/// A count the schema keeps (`task_counts`, see schema V6): `open` tasks by asker, `queued`
/// tasks by desk. One row, whatever the count.
fn kept_count(c: &Connection, scope: &str, name: &str) -> Result<u64, StoreError> {
    let n: Option<i64> = c
        .prepare_cached("SELECT n FROM task_counts WHERE scope = ?1 AND name = ?2")?
        .query_row([scope, name], |r| r.get(0))
        .optional()?;
    Ok(n.unwrap_or(0).unsigned_abs())
}

/// How many open tasks `asker` has, on any desk.
fn open_task_count_of_asker(c: &Connection, asker: &str) -> Result<u64, StoreError> {
    kept_count(c, "open", asker)
}

/// The queue position of a task just submitted to `desk`, if it is queued: it has the
/// desk's highest queue number (one more than any open task's), so every other queued task
/// of the desk is ahead of it and its position is the desk's queued count, which the schema
/// keeps, instead of a count of the queue ahead of it ([`fill_positions`]).
fn position_of_newest(c: &Connection, task: &mut Task) -> Result<(), StoreError> {
    task.queue_position = None;
    if task.state() == TaskState::Submitted {
        task.queue_position = u32::try_from(kept_count(c, "queued", task.desk.as_str())?).ok();
    }
    Ok(())
}

/// Task bodies as a query returns them, decoded.
fn decode_tasks(
    rows: impl Iterator<Item = rusqlite::Result<String>>,
) -> Result<Vec<Task>, StoreError> {
    rows.map(|body| decode_task(&body?)).collect()
}

fn ended_at(t: &Task) -> Option<i64> {
    t.state()
        .is_terminal()
        .then_some(t.status.timestamp.as_millis())
}

fn insert_task(c: &Connection, t: &Task) -> Result<(), StoreError> {
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
fn update_task(c: &Connection, before: &Task, after: &Task) -> Result<(), StoreError> {
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
fn start_next(c: &Connection, desk: &DeskName, now: Timestamp) -> Result<Vec<Task>, StoreError> {
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

/// Fill in queue positions for the queued tasks among `tasks`: a queued task's position is
/// how many queued tasks of its desk come before it, plus one (the order of
/// [`queue::positions`]), counted on the queued-tasks index without decoding any task.
/// Several tasks of one desk share one read of the desk's queue order.
/// Task `id` with its queue position.
fn task_with_position(c: &Connection, id: &TaskId) -> Result<Option<Task>, StoreError> {
    let Some(mut t) = load_task(c, id)? else {
        return Ok(None);
    };
    fill_positions(c, std::slice::from_mut(&mut t))?;
    Ok(Some(t))
}

fn fill_positions(c: &Connection, tasks: &mut [Task]) -> Result<(), StoreError> {
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

fn load_settings(c: &Connection) -> Result<Settings, StoreError> {
    let mut settings = Settings::default();
    let mut stmt = c.prepare_cached("SELECT key, value FROM settings")?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
    for row in rows {
        let (key, value) = row?;
        if let Err(e) = settings.set(&key, &value) {
            tracing::warn!(%key, %value, error = %e, "ignoring a stored setting; using the default");
        }
    }
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;

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
