//! The tray app's tests, in one binary: every test binary is another slow link of Tauri and
//! the WebKit bindings (docs/tauri.md §15, lesson 7).
//!
//! * `commands` drives the window's commands and the app's events through Tauri's mock
//!   runtime (no display), one test per command group.
//! * `notifier` checks what desktop notifications say and that a hung notification service
//!   blocks nobody (a fake desktop).
//! * `window` starts the real `taskkeeper-app` on a private Xvfb display and D-Bus session
//!   (`harness`) with a recording notification server (`notification_server`): a stall reaches
//!   the server and the tray; no service is a warning; a second launch hands over.
//! * `webdriver` drives the real window through tauri-driver and WebKitWebDriver: a task
//!   created over A2A shows in the list; autostart writes its login entry.
//! * `window_process` plays the app at the other end of a window process's pipes: its page's
//!   calls come over them, and it exits when told or when the app is gone.

// Test code may fail loudly: a panic with the value is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod commands;
mod harness;
mod notification_server;
mod notifier;
mod sni_host;
mod support;
mod webdriver;
mod window;
mod window_process;
mod xwd;
