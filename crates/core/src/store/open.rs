//! Opening and closing the database: the `Store` handle itself, the lock file, the checks that
//! refuse a damaged or foreign file before SQLite touches it, the pragmas and the migrations.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rusqlite::Connection;

use super::cache::{DeskCache, SettingsCache};
use super::error::StoreError;
use super::pool::{self, Pool};
use super::writer::Writer;
use super::{reads, schema, wal};

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
    writer: Writer,
    readers: Pool,
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
        self.writer.stop();
    }
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
        configure(&conn, options.synchronous).map_err(|e| open_err(e.to_string()))?;
        schema::migrations()
            .to_latest(&mut conn)
            .map_err(|e| open_err(format!("migration failed: {e}")))?;
        reads::count_statements(&conn);

        let reads = Arc::<reads::Totals>::default();
        let writer = Writer::spawn(conn, Arc::clone(&reads))
            .map_err(|e| open_err(format!("cannot start the writer thread: {e}")))?;
        let readers = Pool::new(path.to_owned(), options.readers, Arc::clone(&reads));
        Ok(Store {
            inner: Arc::new(Inner {
                path: path.to_owned(),
                writer,
                readers,
                reads,
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
    pub fn reads(&self) -> reads::Reads {
        self.inner.reads.now()
    }

    /// Finish the queued writes, stop the writer and release the database for another
    /// process, even while clones of this store are still held somewhere (they get
    /// [`StoreError::Closed`] from then on).
    pub fn close(&self) {
        self.inner.writer.stop();
        self.inner.readers.close();
        let _ = self.inner._lock.unlock();
    }

    /// SQLite's full integrity check; `Ok("ok")` when the file is sound.
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        self.read(|c| Ok(c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?))
    }

    /// Run `f` on a read connection, waiting for one if all are busy ([`Pool::read`]).
    pub(super) fn read<R>(
        &self,
        f: impl FnOnce(&Connection) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        self.inner.readers.read(f)
    }

    /// Run `f` on a read connection only if one is idle now ([`Pool::try_read`]).
    pub(super) fn try_read<R>(
        &self,
        f: impl FnOnce(&Connection) -> Result<R, StoreError>,
    ) -> Option<Result<R, StoreError>> {
        self.inner.readers.try_read(f)
    }

    /// Run `f` in the writer's next group commit and wait for that commit.
    pub(super) fn write<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, StoreError> {
        self.inner.writer.write(f)
    }

    /// Run `f` in the writer's next group commit and hand its outcome to `done` once that
    /// commit is durable or refused ([`Writer::write_then`]: `done` must never block).
    pub(super) fn write_then<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<R, StoreError> + Send + 'static,
        done: impl FnOnce(Result<R, StoreError>) + Send + 'static,
    ) {
        self.inner.writer.write_then(f, done);
    }

    pub(super) fn desk_cache(&self) -> MutexGuard<'_, DeskCache> {
        self.inner
            .desks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn settings_cache(&self) -> MutexGuard<'_, SettingsCache> {
        self.inner
            .settings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The lock file beside the database.
pub fn lock_path(db: &Path) -> PathBuf {
    let mut name = db.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".lock");
    db.with_file_name(name)
}

/// Take the database's lock file, or say who holds it.
pub(super) fn take_lock(path: &Path) -> Result<File, StoreError> {
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
pub(super) fn check_wal(path: &Path) -> Result<(), StoreError> {
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
pub(super) fn check_header(path: &Path) -> Result<(), StoreError> {
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

/// The writer's connection: write-ahead log, `sync` commits, foreign keys (the readers set
/// theirs in [`pool`]).
fn configure(c: &Connection, sync: Synchronous) -> rusqlite::Result<()> {
    c.busy_timeout(pool::BUSY_TIMEOUT)?;
    let sync = match sync {
        Synchronous::Full => "FULL",
        Synchronous::Normal => "NORMAL",
    };
    c.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))?;
    c.execute_batch(&format!(
        "PRAGMA synchronous = {sync}; PRAGMA foreign_keys = ON; PRAGMA journal_size_limit = 67108864;"
    ))?;
    // macOS's fsync does not flush the drive's cache; F_FULLFSYNC does (reliability.md §3).
    #[cfg(target_os = "macos")]
    c.execute_batch("PRAGMA fullfsync = ON; PRAGMA checkpoint_fullfsync = ON;")?;
    Ok(())
}
