//! The loops that forward the daemon's feeds to the page as events (their names and payloads
//! are `events.rs`'s): task changes, settings changes and session changes (those folded, at
//! most one per [`SESSIONS_GAP`]), and notices; and what the session forwarder has done, for
//! those who must know that no event is left to come.

use std::sync::Arc;

use taskkeeper_server::OwnerService;
use taskkeeper_server::notify::Notice;
use taskkeeper_server::owner::api::{NoticeView, TaskView};
use tauri::{AppHandle, Runtime};
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::events::{NOTICE, SESSIONS, SESSIONS_GAP, SETTINGS, TASK};
use crate::window;

/// What the forwarder of [`SESSIONS`] events has done so far: those who must know that no
/// event is left to come (tests) wait on it instead of sleeping.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Forwarding {
    /// The forwarder follows the daemon's feeds: every change from now on reaches the page.
    pub following: bool,
    /// The owner's count of session changes (`OwnerService::session_changes`) as the
    /// forwarder last read it: every change up to it is in an event sent, or in the pending one.
    pub seen: u64,
    /// An event is pending: the changes of this gap fold into it.
    pub pending: bool,
    /// [`SESSIONS`] events sent to the page.
    pub sent: u64,
}

/// The forwarder's [`Forwarding`], published on every step.
#[derive(Debug, Clone)]
pub struct Forwarded(Arc<watch::Sender<Forwarding>>);

impl Default for Forwarded {
    fn default() -> Self {
        Self(Arc::new(watch::Sender::new(Forwarding::default())))
    }
}

impl Forwarded {
    /// Follows what the forwarder has done.
    pub fn follow(&self) -> watch::Receiver<Forwarding> {
        self.0.subscribe()
    }

    fn update(&self, step: impl FnOnce(&mut Forwarding)) {
        self.0.send_modify(step);
    }
}

/// Forwards every task change to the page as [`TASK`], every settings change as [`SETTINGS`]
/// (so a pause made in a browser or with the CLI shows in the window at once), and session
/// changes as [`SESSIONS`] (so a headless session's permission request shows at once), until
/// the daemon stops. If this loop ever lags behind the task feed, the skipped changes are
/// lost, but the next one still arrives and the page re-reads what it shows. What it did with
/// session changes goes to `forwarded`.
pub async fn forward_task_changes<R: Runtime>(
    app: AppHandle<R>,
    owner: OwnerService,
    forwarded: Forwarded,
) {
    let mut changes = owner.changes();
    let mut settings = owner.settings_changes();
    settings.mark_unchanged();
    let mut sessions = owner.session_changes();
    let seen = *sessions.borrow_and_update();
    forwarded.update(|f| {
        f.following = true;
        f.seen = seen;
    });
    // When the pending [`SESSIONS`] event goes out; while one is pending, more session changes
    // fold into it (the wait doesn't hold up task and settings changes).
    let mut sessions_due: Option<Instant> = None;
    loop {
        tokio::select! {
            change = sessions.changed(), if sessions_due.is_none() => {
                if change.is_err() {
                    return;
                }
                sessions_due = Some(Instant::now() + SESSIONS_GAP);
                forwarded.update(|f| f.pending = true);
            }
            () = tokio::time::sleep_until(sessions_due.unwrap_or_else(Instant::now)), if sessions_due.is_some() => {
                sessions_due = None;
                let seen = *sessions.borrow_and_update();
                window::emit(&app, SESSIONS, serde_json::json!({}));
                forwarded.update(|f| {
                    f.pending = false;
                    f.seen = seen;
                    f.sent += 1;
                });
            }
            change = changes.recv() => match change {
                Ok(task) => window::emit(&app, TASK, TaskView::from(&*task)),
                Err(RecvError::Lagged(missed)) => {
                    tracing::debug!(missed, "the task feed lagged; the page re-reads");
                }
                Err(RecvError::Closed) => return,
            },
            change = settings.changed() => {
                if change.is_err() {
                    return;
                }
                match owner.settings().await {
                    Ok(all) => window::emit(&app, SETTINGS, all),
                    Err(error) => tracing::debug!(%error, "could not read the changed settings"),
                }
            }
        }
    }
}

/// Forwards every notice to the page as [`NOTICE`], until the sender goes away.
pub async fn forward_notices<R: Runtime>(
    app: AppHandle<R>,
    mut notices: broadcast::Receiver<Notice>,
) {
    loop {
        match notices.recv().await {
            Ok(notice) => window::emit(&app, NOTICE, NoticeView::from(&notice)),
            Err(RecvError::Lagged(_)) => {}
            Err(RecvError::Closed) => return,
        }
    }
}
