//! The read connections: a small pool, opened as needed up to a bound and kept for reuse, and
//! the two ways a read takes one (waiting for one, or only one idle now).

use std::sync::PoisonError;

use rusqlite::{Connection, OpenFlags};

use super::error::StoreError;
use super::open::{Store, configure};
use super::reads;

/// The read connections: those idle, and how many are open (idle or in use).
#[derive(Default)]
pub(super) struct Readers {
    pub(super) idle: Vec<Connection>,
    pub(super) open: usize,
}

impl Store {
    pub(super) fn read<R>(
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
    pub(super) fn try_read<R>(
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

    pub(super) fn readers(&self) -> std::sync::MutexGuard<'_, Readers> {
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
    pub(super) fn take_reader(&self) -> Result<Connection, StoreError> {
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

    pub(super) fn open_reader(&self) -> Result<Connection, StoreError> {
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
}
