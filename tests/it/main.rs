//! The tray app's tests, in one binary: every test binary is another slow link of Tauri and
//! the WebKit bindings (docs/tauri.md §15, lesson 7).
//!
//! * `commands` drives the window's commands through Tauri's mock runtime (no display).
//! * `window` starts the real `taskkeeper-app` under Xvfb and a private D-Bus session and
//!   checks that the page lists a task added over the owner API.

// Test code may fail loudly: a panic with the value is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod commands;
mod support;
mod window;
mod xwd;
