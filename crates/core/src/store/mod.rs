//! The durable store: SQLite (bundled), WAL, `synchronous=FULL` by default, one writer thread
//! with group commit ([`writer`]), a small pool of read connections ([`pool`]), versioned
//! migrations ([`schema`]) and a lock file so only one process uses a database ([`open`]).
//!
//! Laid out by what it keeps: one module per table (tasks, sessions, desks, askers, push,
//! settings, marks), each with its SQL beside it, on shared machinery (opening, the reader
//! pool, the writer, errors, row decoding, the in-memory copies). This file only declares the
//! modules and names the public API; no module imports from it.

mod askers;
mod cache;
mod counts;
mod desks;
mod error;
mod marks;
mod open;
mod pool;
mod push;
mod reads;
mod recover;
mod rows;
mod schema;
mod sessions;
mod settings;
mod tasks;
pub mod wal;
mod writer;

pub use askers::Asker;
pub use counts::DeskLoad;
pub use desks::NewDesk;
pub use error::StoreError;
pub use open::{Store, StoreOptions, Synchronous, lock_path};
pub use reads::Reads;
pub use recover::{LOST_TASKS_FILE, Lost, LostTask, Recovery, aside_dir, lost_tasks, recover};
pub use tasks::{Changed, PageQuery, Resend, StateFilter, TaskFilter};
