//! Every event the app sends to the window, in one place (docs/tauri.md §15, lesson 10): the
//! names and their payloads. What sends them is above this module and names it: the loops
//! that forward the daemon's feeds to the page (`feeds.rs`) and the window's navigation
//! (`window::navigate`), both through `window::emit`.
//!
//! | event | payload | when |
//! |---|---|---|
//! | [`TASK`] `taskkeeper://task` | the task as the owner API shows it (`TaskView`) | every committed task change |
//! | [`NOTICE`] `taskkeeper://notice` | the notice (`{"kind": "stalled", "task": …}`, `"session-ended"`, `"permission-asked"`, `"blocked"`, `"finished"`) | a stall, a session that ended with tasks open, a permission request, a task blocked on its asker or finished (every kind, whatever the notification settings) |
//! | [`NAVIGATE`] `taskkeeper://navigate` | `"settings"`, `"desks"` or `{"task": id}` | the tray's Settings item, a click on a notification (held until a page just made has drawn once, `window::navigate`) |
//! | [`SETTINGS`] `taskkeeper://settings` | every setting, `{key: "value as text", …}` (the owner API's `settings`) | every settings change (the window, a browser, the CLI) |
//! | [`SESSIONS`] `taskkeeper://sessions` | `{}` (a hint: re-read the sessions) | a session changed in a way the session list shows (activity, a headless session's permission request, launch, end); at most one per [`SESSIONS_GAP`] |
//!
//! Events carry no secrets and change nothing; the page re-reads through the commands when it
//! needs more.

use std::time::Duration;

use serde::Serialize;

/// A task changed; the payload is the task as the owner API shows it.
pub const TASK: &str = "taskkeeper://task";
/// Something the owner should hear about (a stall, a session that ended with tasks open).
pub const NOTICE: &str = "taskkeeper://notice";
/// Open a view of the window: `"settings"` or `{"task": id}`.
pub const NAVIGATE: &str = "taskkeeper://navigate";
/// A setting changed; the payload is every setting after the change.
pub const SETTINGS: &str = "taskkeeper://settings";
/// A session changed in a way the session list shows; the payload is `{}`: re-read the list.
pub const SESSIONS: &str = "taskkeeper://sessions";

/// The shortest time between two [`SESSIONS`] events, as on the owner's SSE stream: hooks
/// change sessions on every tool call, and changes within the gap are folded into one event.
pub const SESSIONS_GAP: Duration = Duration::from_millis(250);

/// Where the window should go, as the `taskkeeper://navigate` payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Navigate {
    /// A named view: [`Navigate::SETTINGS`] or [`Navigate::DESKS`].
    View(&'static str),
    /// One task's detail.
    Task { task: String },
}

impl Navigate {
    pub const SETTINGS: Navigate = Navigate::View("settings");
    pub const DESKS: Navigate = Navigate::View("desks");
    pub const DIGEST: Navigate = Navigate::View("digest");

    pub fn task(id: impl Into<String>) -> Self {
        Navigate::Task { task: id.into() }
    }
}
