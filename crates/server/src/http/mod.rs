//! HTTP itself: the rooms and who may enter them ([`routes`]), the guard (`Host`, `Origin`,
//! the bearer token resolved to a [`auth::Caller`]), the body limit (JSON bodies of at most
//! 1 MiB), the web UI's files and sign-in, how every area refuses ([`error`]; for a gRPC call,
//! as a gRPC status: [`grpc_refusals`]), and the
//! network listener's front for strangers ([`network`]) and its certificates ([`tls`]). The
//! areas' routes live with their areas (the owner API in `owner`, A2A in `a2a`, MCP in `mcp`,
//! the hooks in `agents`), and the root router that puts their rooms together is above them
//! all (`crate::router`), so HTTP names none of the areas it serves.

pub(crate) mod auth;
pub(crate) mod error;
pub(crate) mod grpc_refusals;
pub(crate) mod guard;
pub mod network;
pub mod routes;
pub mod tls;
pub mod ui;
pub mod ui_codes;

/// The largest request body accepted.
pub const MAX_BODY: usize = 1024 * 1024;

pub(crate) use error::{Body, error_response};
