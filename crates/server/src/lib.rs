//! Taskkeeper's daemon: one axum router on 127.0.0.1 serving the owner API, A2A, MCP, the
//! hook intake and the web UI, each area a room ([`routes`]) that admits only its kinds of
//! caller, behind one guard that checks `Host` and `Origin` and resolves the bearer token;
//! plus the [`OwnerService`], the one place every owner action exists, which both the HTTP
//! API and the tray app's commands call.
//!
//! The daemon translates; it decides nothing about tasks itself. Every change goes through
//! `taskkeeper_core::Store`, which applies the core's transition table.

pub mod a2a;
pub mod agents;
mod child_env;
mod config;
pub mod conformance;
mod daemon;
pub mod delivery;
pub mod files;
pub mod http;
pub mod logging;
pub mod mcp;
pub mod notify;
pub mod owner;
mod private;
pub mod sessions;
mod tasks;
mod token;
pub mod watchdog;

pub use config::{DaemonConfig, default_data_dir};
pub use daemon::{Daemon, DaemonError};
pub use http::auth::{Caller, CallerKind};
pub use owner::{OwnerError, OwnerErrorKind, OwnerService, TaskQuery, WorkerEnding, WorkerStatus};
pub use tasks::Tasks;
pub use token::{OWNER_FILE as OWNER_TOKEN_FILE, Token, WORKER_FILE as WORKER_TOKEN_FILE};
