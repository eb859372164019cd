//! The `taskkeeper` binary as a user runs it: the daemon as a child process, the CLI against
//! it, refusals at start-up, and kill -9 durability.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests fail loudly

mod approvals;
mod claude;
mod cli;
mod codex_gemini;
mod codex_tui;
mod connect;
mod durability;
mod generic;
mod interop;
mod open;
mod refusals;
mod reminders;
mod secrets;
mod service;
mod support;
mod tui_paste;
