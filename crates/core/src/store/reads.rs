//! Counts of what the store reads: the SQL statements it runs, the steps SQLite's virtual
//! machine takes to run them, and the task records it decodes. A cost that must not grow with a desk's queue (issue 13) is pinned by a test that
//! counts these around one call, never by timing it. The steps show what the other two do
//! not: a `COUNT(*)` over an index is one statement and decodes nothing, yet walks one index
//! entry (a few steps) per row it counts.
//!
//! SQLite's statement trace calls a plain function on the thread that runs the statement,
//! and a store call runs on one thread (a reader's, or the writer's), so the counts are kept
//! per thread while the call runs and added to the store's totals when it returns.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::trace::{TraceEvent, TraceEventCodes};
use rusqlite::{Connection, StatementStatus};

thread_local! {
    static STATEMENTS: Cell<u64> = const { Cell::new(0) };
    static DECODED: Cell<u64> = const { Cell::new(0) };
    /// SQLite keeps each statement's step count for the statement's life (a cached statement
    /// adds up over its runs), as a 32-bit counter: a run's steps are the count at its end
    /// minus the count at its start, so the start is taken off and the end added, wrapping.
    static STEPS: Cell<u32> = const { Cell::new(0) };
}

/// What the store has read since it was opened (see [`crate::Store::reads`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reads {
    /// SQL statements started (each `BEGIN`, savepoint and query counts).
    pub statements: u64,
    /// Task records decoded from their stored JSON.
    pub tasks_decoded: u64,
    /// Steps of SQLite's virtual machine over those statements (`SQLITE_STMTSTATUS_VM_STEP`),
    /// which grow with the rows and index entries a statement walks.
    pub vm_steps: u64,
    /// Read connections opened (each parses the schema before its first query).
    pub connections_opened: u64,
}

impl std::ops::Sub for Reads {
    type Output = Reads;
    fn sub(self, earlier: Reads) -> Reads {
        Reads {
            statements: self.statements.saturating_sub(earlier.statements),
            tasks_decoded: self.tasks_decoded.saturating_sub(earlier.tasks_decoded),
            vm_steps: self.vm_steps.saturating_sub(earlier.vm_steps),
            connections_opened: self
                .connections_opened
                .saturating_sub(earlier.connections_opened),
        }
    }
}

fn steps_of(stmt: &rusqlite::trace::StmtRef<'_>) -> u32 {
    u32::try_from(stmt.get_status(StatementStatus::VmStep)).unwrap_or(0)
}

fn on_statement(event: TraceEvent<'_>) {
    match event {
        // SQLite also reports each trigger, and each statement of a trigger, as it starts
        // inside a statement, as a comment ("-- TRIGGER name", "-- UPDATE ..."): part of the
        // statement already counted, whose steps include theirs. No statement of the store
        // starts with a comment.
        TraceEvent::Stmt(_, sql) if sql.starts_with("-- ") => {}
        TraceEvent::Stmt(stmt, _) => {
            STATEMENTS.with(|n| n.set(n.get().wrapping_add(1)));
            let start = steps_of(&stmt);
            STEPS.with(|n| n.set(n.get().wrapping_sub(start)));
        }
        // Sent when a run ends (its statement is reset), with the steps of all its runs.
        TraceEvent::Profile(stmt, _) => {
            let end = steps_of(&stmt);
            STEPS.with(|n| n.set(n.get().wrapping_add(end)));
        }
        _ => {}
    }
}

/// Count the statements `conn` runs and their steps.
pub(super) fn count_statements(conn: &Connection) {
    conn.trace_v2(
        TraceEventCodes::SQLITE_TRACE_STMT | TraceEventCodes::SQLITE_TRACE_PROFILE,
        Some(on_statement),
    );
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
        vm_steps: u64::from(STEPS.with(|n| n.replace(0))),
        connections_opened: 0,
    }
}

/// A store's running totals.
#[derive(Debug, Default)]
pub(super) struct Totals {
    statements: AtomicU64,
    tasks_decoded: AtomicU64,
    vm_steps: AtomicU64,
    connections_opened: AtomicU64,
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
        self.vm_steps.fetch_add(read.vm_steps, Ordering::Relaxed);
        out
    }

    pub(super) fn connection_opened(&self) {
        self.connections_opened.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn now(&self) -> Reads {
        Reads {
            statements: self.statements.load(Ordering::Relaxed),
            tasks_decoded: self.tasks_decoded.load(Ordering::Relaxed),
            vm_steps: self.vm_steps.load(Ordering::Relaxed),
            connections_opened: self.connections_opened.load(Ordering::Relaxed),
        }
    }
}
