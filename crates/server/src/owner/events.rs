//! The owner's event stream (`GET /api/events`, SSE): what the window and a browser follow
//! instead of polling.

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};

use crate::owner::OwnerService;

/// The shortest time between two `sessions` events on the owner's stream.
const SESSIONS_EVENT_GAP: std::time::Duration = std::time::Duration::from_millis(250);

/// The owner's event stream (SSE): `task` events with the task as the owner API shows it on
/// every change, `notice` events (a stall, a session that ended with tasks open),
/// `settings` events with every setting after one changed, and `sessions` events (no data
/// worth reading: `{}`) when a session changed in a way `/api/sessions` shows — at most one
/// per [`SESSIONS_EVENT_GAP`], since hooks change sessions on every tool call.
pub(crate) async fn events(
    State((owner, notices)): State<(OwnerService, Arc<crate::notify::EventNotifier>)>,
) -> Response {
    use axum::response::sse::{Event, KeepAlive, Sse};
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Event, std::convert::Infallible>>(64);
    let mut changes = owner.changes();
    let mut notes = notices.subscribe();
    let mut settings = owner.settings_changes();
    settings.mark_unchanged();
    let mut stop = owner.stopping();
    let mut sessions = owner.session_changes();
    sessions.mark_unchanged();
    let sessions_tx = tx.clone();
    let mut sessions_stop = owner.stopping();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                r = sessions.changed() => if r.is_err() { return },
                // The client went away.
                () = sessions_tx.closed() => return,
                // The stream ends when the daemon stops: nothing may hold it open.
                () = async { let _ = sessions_stop.wait_for(|s| *s).await; } => return,
            }
            // Changes in the gap are folded into this event.
            tokio::time::sleep(SESSIONS_EVENT_GAP).await;
            sessions.mark_unchanged();
            let event = Event::default().event("sessions").data("{}");
            if sessions_tx.send(Ok(event)).await.is_err() {
                return;
            }
        }
    });
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                r = settings.changed() => match r {
                    Ok(()) => match owner.settings().await {
                        Ok(all) => Event::default().event("settings").json_data(all),
                        Err(_) => continue,
                    },
                    Err(_) => return,
                },
                r = changes.recv() => match r {
                    Ok(t) => Event::default().event("task").json_data(crate::owner::api::TaskView::from(&*t)),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => Ok(Event::default().event("resync").data("{}")),
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                },
                r = notes.recv() => match r {
                    Ok(n) => Event::default().event("notice").json_data(crate::owner::api::NoticeView::from(&n)),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                },
                () = async { let _ = stop.wait_for(|s| *s).await; } => return,
            };
            let Ok(event) = event else { continue };
            if tx.send(Ok(event)).await.is_err() {
                return;
            }
        }
    });
    Sse::new(tokio_stream::wrappers::ReceiverStream::new(rx))
        .keep_alive(KeepAlive::default())
        .into_response()
}
