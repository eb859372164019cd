//! The waiter: an idle session's long poll (`taskkeeper hook wait`) that is answered with
//! text when work for the session arrives. It claims what it tells through the one claim rule
//! in [`crate::delivery`], so a waiter and a handover never both deliver the same task.

use std::time::Duration;

use taskkeeper_core::delivery::{self, Means, Method};
use taskkeeper_core::session::SessionId;
use taskkeeper_core::{DeskName, StoreError};
use tokio::sync::watch;

use super::{Delivery, State};
use crate::sessions::{Interested, lock};

/// Unregisters a waiter when its long poll ends, however it ends.
struct Waiting<'a>(&'a State, SessionId);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        lock(&self.0.waiting).remove(&self.1);
    }
}

/// What a waiter is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaitOutcome {
    /// Wake the session with this text.
    Deliver(String),
    /// Leave quietly: a newer waiter, a turn started, the session ended.
    Leave(&'static str),
}

impl Delivery {
    /// How many times a waiter has woken to look again, since the start.
    pub fn waiter_wakes(&self) -> u64 {
        self.state
            .waiter_wakes
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A turn the owner typed resets the handover count.
    pub fn owner_wrote(&self, id: &SessionId) {
        lock(&self.state.handovers).remove(id);
    }

    /// Whether an asyncRewake waiter of `id` is parked (tests wait on it instead of a sleep).
    pub fn has_waiter(&self, id: &SessionId) -> bool {
        lock(&self.state.waiting).contains(id)
    }

    /// The asyncRewake waiter: wait until the idle session has something to be told, then
    /// claim it; leave when superseded, when a turn starts, or when the session ends.
    pub async fn wait(&self, id: &SessionId) -> Result<WaitOutcome, StoreError> {
        let generation = {
            let mut waiters = lock(&self.state.waiters);
            let g = waiters.entry(id.clone()).or_insert(0);
            *g += 1;
            *g
        };
        let turn0 = self.sessions.turns(id);
        lock(&self.state.waiting).insert(id.clone());
        let _registered = Waiting(&self.state, id.clone());
        // Let an older waiter see it was superseded (before following the session, so this
        // waiter does not wake for its own arrival).
        self.sessions.session_touched(id);
        // Only its own session and its desk's tasks concern a waiter; the desk is followed
        // from the first read of the session on.
        let mut own = self.sessions.follow(Interested::Session(id.clone()));
        let mut desk: Option<(DeskName, watch::Receiver<u64>)> = None;
        let mut first = true;
        loop {
            own.borrow_and_update();
            if let Some((_, rx)) = desk.as_mut() {
                rx.borrow_and_update();
            }
            if !first {
                self.state
                    .waiter_wakes
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            first = false;
            if lock(&self.state.waiters).get(id) != Some(&generation) {
                return Ok(WaitOutcome::Leave("a newer waiter took over"));
            }
            if self.sessions.turns(id) != turn0 {
                return Ok(WaitOutcome::Leave("the session started a turn"));
            }
            let session = match self.sessions.tasks.get_session(id).await? {
                Some(s) if s.is_live() => s,
                _ => return Ok(WaitOutcome::Leave("the session ended")),
            };
            if desk.as_ref().is_none_or(|(d, _)| *d != session.desk) {
                // Followed before the claim below reads the desk: nothing falls between.
                let rx = self.sessions.follow(Interested::Desk(session.desk.clone()));
                desk = Some((session.desk.clone(), rx));
            }
            // The ranking decides whether a waiter is the way in (a launched session is told
            // on its stdin).
            let waiter = |m| Means { waiter: true, ..m };
            match self.first_method(&session, waiter).await? {
                Some(Method::Waiter) => {}
                Some(Method::Stdin) => {
                    return Ok(WaitOutcome::Leave(
                        "Taskkeeper speaks to this session on its stdin",
                    ));
                }
                _ => {
                    return Ok(WaitOutcome::Leave(
                        "another way in reaches this session first",
                    ));
                }
            }
            if session.activity == taskkeeper_core::Activity::Idle {
                let note = self.claim_note(id, None).await?;
                let tasks = self.claim(&session).await?;
                let text: Vec<String> = note.into_iter().chain(tasks).collect();
                if !text.is_empty() {
                    self.expect_turn(id);
                    return Ok(WaitOutcome::Deliver(delivery::joined(text)));
                }
            }
            // The cap lets a level signal (a killed process) be noticed while nothing else
            // happens.
            let mut stop = self.sessions.stopping();
            let changed = async {
                match desk.as_mut() {
                    Some((_, rx)) => tokio::select! {
                        _ = own.changed() => {}
                        _ = rx.changed() => {}
                    },
                    None => {
                        let _ = own.changed().await;
                    }
                }
            };
            tokio::select! {
                _ = tokio::time::timeout(Duration::from_secs(30), changed) => {}
                _ = stop.wait_for(|s| *s) => return Ok(WaitOutcome::Leave("the daemon is stopping")),
            }
            self.sessions.reconcile(id).await?;
        }
    }
}
