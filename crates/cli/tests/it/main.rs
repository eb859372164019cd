//! The `taskkeeper` binary as a user runs it: the daemon as a child process, the CLI against
//! it, refusals at start-up, and kill -9 durability.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// tests fail loudly
// The tests say what they skip on the harness's stderr, not on an owner's terminal: the
// binary's rule (everything through src/out.rs) is not theirs.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)]

mod approvals;
mod claude;
mod cli;
mod codex_gemini;
mod codex_tui;
mod connect;
mod durability;
mod generic;
mod interop;
mod network_asker;
mod open;
mod refusals;
mod reminders;
mod secrets;
mod service;
mod signed_cards;
mod support;
mod terminal;
mod tui_paste;
