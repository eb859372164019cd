//! Taskkeeper's domain: what a task is, how it may change, which task a desk works on next,
//! the settings, and the durable store that is the only writer of all of it.
//!
//! Everything here is plain data and pure functions over an injected [`Clock`], except the
//! [`store`], which owns the SQLite database. Nothing here knows about HTTP, JSON-RPC, MCP,
//! Tauri or a particular agent's transport: the server crate translates those worlds into the
//! [`transition::Event`]s defined here (what an agent's hook *means* for its session is pure,
//! and lives in [`agent_hooks`]).
//!
//! The rules live in one place each:
//! - [`transition::apply`] is the whole task state machine (design.md §3 rule 1, 3 and 4);
//! - [`queue::next_to_start`] decides which queued task of a desk starts (rule 3);
//! - [`session::owner_wait_change`] says whether a desk waits on the owner, and
//!   [`session::works_on`] which session works on a task;
//! - [`desk::place`] says which desk a new session works at;
//! - [`delivery::ranked`] orders the ways into a session, and [`delivery::telling`] words
//!   what is told;
//! - [`settings`] parses and validates every tunable number;
//! - [`limits`] bounds what one caller can make Taskkeeper keep;
//! - [`network`] says where the listener for askers on other machines listens, and how
//!   often a stranger may ask;
//! - [`asker::may_read`] says who may read a task;
//! - [`terminal::visible`] is how words from outside are shown on a terminal.

pub mod agent_hooks;
pub mod asker;
pub mod autolaunch;
pub mod clock;
pub mod delivery;
pub mod desk;
pub mod digest;
pub mod files;
pub mod limits;
pub mod network;
pub mod push;
pub mod queue;
pub mod session;
pub mod session_id;
pub mod settings;
pub mod store;
pub mod task;
pub mod terminal;
pub mod transition;
pub mod watchdog;

pub use clock::{Clock, ManualClock, SystemClock, Timestamp};
pub use desk::{AgentKind, Desk, DeskName};
pub use session::{Activity, Session, SessionId};
pub use store::{Store, StoreError, StoreOptions};
pub use task::{
    Artifact, ArtifactChange, Message, NewTask, Part, Role, Task, TaskId, TaskState, TaskStatus,
};
pub use transition::{Event, TransitionError};
