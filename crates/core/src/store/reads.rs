//! Counts of what the store reads: the SQL statements it runs and the task records it
//! decodes. A cost that must not grow with a desk's queue (issue 13) is pinned by a test that
//! counts these around one call, never by timing it.
//!
//! SQLite's statement trace calls a plain function on the thread that runs the statement,
//! and a store call runs on one thread (a reader's, or the writer's), so the counts are kept
//! per thread while the call runs and added to the store's totals when it returns.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::Connection;
use rusqlite::trace::{TraceEvent, TraceEventCodes};

thread_local! {
    static STATEMENTS: Cell<u64> = const { Cell::new(0) };
    static DECODED: Cell<u64> = const { Cell::new(0) };
}

/// What the store has read since it was opened (see [`crate::Store::reads`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reads {
    /// SQL statements started (each `BEGIN`, savepoint and query counts).
    pub statements: u64,
    /// Task records decoded from their stored JSON.
    pub tasks_decoded: u64,
}

impl std::ops::Sub for Reads {
    type Output = Reads;
    fn sub(self, earlier: Reads) -> Reads {
        Reads {
            statements: self.statements.saturating_sub(earlier.statements),
            tasks_decoded: self.tasks_decoded.saturating_sub(earlier.tasks_decoded),
        }
    }
}

fn on_statement(event: TraceEvent<'_>) {
    if matches!(event, TraceEvent::Stmt(..)) {
        STATEMENTS.with(|n| n.set(n.get().wrapping_add(1)));
    }
}

/// Count the statements `conn` runs.
pub(super) fn count_statements(conn: &Connection) {
    conn.trace_v2(TraceEventCodes::SQLITE_TRACE_STMT, Some(on_statement));
}

/// One task record decoded on this thread.
pub(super) fn task_decoded() {
    DECODED.with(|n| n.set(n.get().wrapping_add(1)));
}

/// This thread's counts since the last take, reset.
fn take() -> Reads {
    Reads {
        statements: STATEMENTS.with(|n| n.replace(0)),
        tasks_decoded: DECODED.with(|n| n.replace(0)),
    }
}

/// A store's running totals.
#[derive(Debug, Default)]
pub(super) struct Totals {
    statements: AtomicU64,
    tasks_decoded: AtomicU64,
}

impl Totals {
    /// Run `f`, adding what it read on this thread to the totals.
    pub(super) fn counting<R>(&self, f: impl FnOnce() -> R) -> R {
        let _ = take();
        let out = f();
        let read = take();
        self.statements
            .fetch_add(read.statements, Ordering::Relaxed);
        self.tasks_decoded
            .fetch_add(read.tasks_decoded, Ordering::Relaxed);
        out
    }

    pub(super) fn now(&self) -> Reads {
        Reads {
            statements: self.statements.load(Ordering::Relaxed),
            tasks_decoded: self.tasks_decoded.load(Ordering::Relaxed),
        }
    }
}
