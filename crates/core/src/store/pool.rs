//! The read connections: a small pool, opened as needed up to a bound and kept for reuse, and
//! the two ways a read takes one (waiting for one, or only one idle now). The store's handle
//! owns one [`Pool`] and hands its reads to it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::error::StoreError;
use super::reads;

/// How long a connection waits for a lock SQLite's other connections hold before it gives up
/// (the writer's and the readers').
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The read connections of one database.
pub(super) struct Pool {
    path: PathBuf,
    /// The most connections open at once (at least one).
    most: usize,
    reads: Arc<reads::Totals>,
    readers: Mutex<Readers>,
    /// Told when a read connection goes back to the pool.
    back: Condvar,
    /// Set by [`Pool::close`]: reads are refused.
    closed: AtomicBool,
}

/// The read connections: those idle, and how many are open (idle or in use).
#[derive(Default)]
struct Readers {
    idle: Vec<Connection>,
    open: usize,
}

impl Pool {
    /// A pool of at most `most` connections to the database at `path`, none opened yet, whose
    /// reads are added to `reads`.
    pub(super) fn new(path: PathBuf, most: usize, reads: Arc<reads::Totals>) -> Pool {
        Pool {
            path,
            most: most.max(1),
            reads,
            readers: Mutex::default(),
            back: Condvar::new(),
            closed: AtomicBool::new(false),
        }
    }

    /// Run `f` on a read connection, waiting for one if all are busy.
    pub(super) fn read<R>(
        &self,
        f: impl FnOnce(&Connection) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        let conn = self.take()?;
        let result = self.reads.counting(|| f(&conn));
        self.give_back(conn);
        result
    }

    /// [`Pool::read`] only if a read connection is idle now: never waits for one and never
    /// opens one, so a caller on an async worker can read without blocking it on the pool
    /// (`None`: none was idle; read through the pool instead).
    pub(super) fn try_read<R>(
        &self,
        f: impl FnOnce(&Connection) -> Result<R, StoreError>,
    ) -> Option<Result<R, StoreError>> {
        let conn = {
            let mut pool = self.readers();
            if self.closed.load(Ordering::SeqCst) {
                return Some(Err(StoreError::Closed));
            }
            pool.idle.pop()?
        };
        let result = self.reads.counting(|| f(&conn));
        self.give_back(conn);
        Some(result)
    }

    /// Refuse reads from now on and close the idle connections; those in use close as they
    /// come back.
    pub(super) fn close(&self) {
        {
            let mut pool = self.readers();
            self.closed.store(true, Ordering::SeqCst);
            let idle = pool.idle.len();
            pool.idle.clear();
            pool.open = pool.open.saturating_sub(idle);
        }
        self.back.notify_all();
    }

    fn readers(&self) -> MutexGuard<'_, Readers> {
        self.readers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn give_back(&self, conn: Connection) {
        let mut pool = self.readers();
        if self.closed.load(Ordering::SeqCst) {
            pool.open = pool.open.saturating_sub(1);
        } else {
            pool.idle.push(conn);
        }
        drop(pool);
        self.back.notify_one();
    }

    /// A read connection: an idle one, else a new one while fewer than `most` are open, else
    /// the next one given back. Waiting beats opening one more: a new connection parses the
    /// whole schema before its first query, and under many concurrent calls on two cores a
    /// pool that opened and dropped its extras did that on most reads.
    fn take(&self) -> Result<Connection, StoreError> {
        let mut pool = self.readers();
        loop {
            if self.closed.load(Ordering::SeqCst) {
                return Err(StoreError::Closed);
            }
            if let Some(c) = pool.idle.pop() {
                return Ok(c);
            }
            if pool.open < self.most {
                pool.open += 1;
                drop(pool);
                let opened = self.open_reader();
                if opened.is_err() {
                    self.readers().open -= 1;
                    self.back.notify_one();
                }
                return opened;
            }
            pool = self.back.wait(pool).unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn open_reader(&self) -> Result<Connection, StoreError> {
        let c = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_URI,
        )?;
        c.busy_timeout(BUSY_TIMEOUT)?;
        c.execute_batch("PRAGMA query_only = ON;")?;
        reads::count_statements(&c);
        self.reads.connection_opened();
        Ok(c)
    }
}
