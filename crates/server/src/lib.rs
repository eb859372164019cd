//! Taskkeeper's daemon: one axum router on 127.0.0.1 (`router.rs`, over [`http`]) serving
//! the owner API ([`owner`]), A2A ([`a2a`]), MCP ([`mcp`]), the agents' hook intake
//! ([`agents`]) and the web UI, each area a room ([`http::routes`]) that admits only its kinds of caller, behind one
//! guard that checks `Host` and `Origin` and resolves the bearer token; plus the services the
//! areas share: the task service, the sessions registry ([`sessions`]), delivery
//! ([`delivery`]), the [`watchdog`] and the notifier ([`notify`]). The askers' rooms may also
//! be served on a second listener beyond loopback, over TLS ([`network`]), behind a front of
//! its own for strangers. `ARCHITECTURE.md` has the map.
//!
//! The daemon translates; it decides nothing about tasks itself. Every change goes through
//! `taskkeeper_core::Store`, which applies the core's transition table.

pub mod a2a;
pub mod agents;
pub mod card_key;
mod child_env;
mod config;
pub mod conformance;
mod daemon;
pub mod delivery;
pub mod error;
pub mod files;
pub mod http;
pub mod logging;
pub mod mcp;
pub mod network;
pub mod notify;
pub mod owner;
mod private;
mod router;
pub mod services;
pub mod sessions;
mod tasks;
mod token;
pub mod watchdog;

pub use config::{DaemonConfig, default_data_dir};
pub use daemon::{Daemon, DaemonError};
pub use http::auth::{Caller, CallerKind};
pub use http::network::Timeouts as NetworkTimeouts;
pub use network::{NetworkState, NetworkStatus};
pub use owner::{OwnerError, OwnerErrorKind, OwnerService, TaskQuery, WorkerEnding, WorkerStatus};
pub use taskkeeper_core::network::{Network, Tls};
pub use tasks::{Tasks, Trips};
pub use token::{OWNER_FILE as OWNER_TOKEN_FILE, Token, WORKER_FILE as WORKER_TOKEN_FILE};
