//! Work that restarts itself: the loop that carries out `core::autolaunch` for the desks the
//! owner set to launch a session by themselves. It launches through the owner service (the
//! same launch the window's and the CLI's Launch use) and keeps each desk's attempts in
//! memory, so a restart of the daemon starts afresh (that is what brings work back after a
//! reboot) while a session that dies at once cannot start a launch loop.
//!
//! Event-driven like the watchdog: it looks again when a task or a session changes, when
//! the owner changes a desk, or when the guard's wait ends; with nothing held it sleeps.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use taskkeeper_core::autolaunch::{self, Attempts, Decision};
use taskkeeper_core::store::{StateFilter, TaskFilter};
use taskkeeper_core::{DeskName, Timestamp};
use tokio::sync::{Notify, watch};

use crate::owner::OwnerService;

/// Each desk's launches by itself since its work last moved, and the loop's wake.
#[derive(Debug, Default)]
pub(crate) struct AutoLaunches {
    attempts: Mutex<HashMap<DeskName, Attempts>>,
    wake: Notify,
}

/// The longest the loop sleeps while a desk's launch is held (the wall clock may jump).
const CAP: Duration = Duration::from_secs(30);

impl AutoLaunches {
    pub(crate) fn attempts(&self, desk: &DeskName) -> Attempts {
        self.lock().get(desk).copied().unwrap_or_default()
    }

    /// The desk's work moved, or the owner acted: the guard starts afresh.
    pub(crate) fn reset(&self, desk: &DeskName) {
        self.lock().remove(desk);
        self.poke();
    }

    pub(crate) fn poke(&self) {
        self.wake.notify_one();
    }

    fn launched(&self, desk: &DeskName, now: Timestamp) {
        self.lock().entry(desk.clone()).or_default().launched(now);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<DeskName, Attempts>> {
        self.attempts.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Look at every desk set to launch by itself, launch where due; returns the earliest time
/// a held launch becomes due.
pub(crate) async fn tick(owner: &OwnerService, now: Timestamp) -> Option<Timestamp> {
    let read = owner
        .tasks()
        .blocking(|s, _| {
            let desks: Vec<_> = s.desks()?.into_iter().filter(|d| d.auto_launch).collect();
            let open = s.tasks(&TaskFilter {
                state: StateFilter::Open,
                ..Default::default()
            })?;
            Ok((desks, open, s.sessions(None)?))
        })
        .await;
    let (desks, open, sessions) = match read {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(error = %e, "auto-launch could not read the desks; trying again soon");
            return Some(now.plus(CAP));
        }
    };
    let launches = owner.auto_launches();
    let mut next: Option<Timestamp> = None;
    for desk in desks {
        let work = autolaunch::has_work(open.iter().filter(|t| t.desk == desk.name));
        let live = autolaunch::has_live_session(sessions.iter().filter(|s| s.desk == desk.name));
        match autolaunch::decide(true, work, live, launches.attempts(&desk.name), now) {
            Decision::Nothing | Decision::GaveUp => {}
            Decision::WaitUntil(at) => next = Some(next.map_or(at, |n| n.min(at))),
            Decision::Launch => {
                launches.launched(&desk.name, now);
                match owner.launch_by_itself(&desk.name).await {
                    Ok(s) => tracing::info!(desk = %desk.name, session = %s.id,
                        "launched a session by itself: the desk has work and no live session"),
                    Err(e) => tracing::warn!(desk = %desk.name, error = %e,
                        "could not launch a session by itself; the guard holds the next try"),
                }
                let at = now.plus(autolaunch::backoff(launches.attempts(&desk.name).count));
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        }
    }
    next
}

/// The loop, until `stop`.
pub(crate) async fn run(owner: OwnerService, mut stop: watch::Receiver<bool>) {
    let mut feed = owner.changes();
    let mut sessions = owner.session_changes();
    let launches = owner.auto_launches();
    loop {
        let now = owner.tasks().now();
        let next = tick(&owner, now).await;
        let sleep = next.map(|due| due.since(owner.tasks().now()).clamp(Duration::ZERO, CAP));
        let changed = async {
            tokio::select! {
                task = feed.recv() => {
                    // A task that ended moved its desk's work: its guard starts afresh.
                    if let Ok(t) = task && !t.is_open() {
                        launches.reset(&t.desk);
                    }
                }
                _ = sessions.changed() => {}
                () = launches.wake.notified() => {}
            }
        };
        let woke = async {
            match sleep {
                Some(d) => {
                    let _ = tokio::time::timeout(d, changed).await;
                }
                None => changed.await,
            }
        };
        tokio::select! {
            () = woke => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

/// Give a view of a desk what the guard knows.
pub(crate) fn describe(
    view: &mut crate::owner::api::DeskView,
    desk: &DeskName,
    launches: &Arc<AutoLaunches>,
    now: Timestamp,
) {
    if !view.auto_launch {
        return;
    }
    let attempts = launches.attempts(desk);
    match autolaunch::decide(true, view.needs_session, false, attempts, now) {
        Decision::WaitUntil(at) => view.auto_launch_retry_at = Some(at),
        Decision::GaveUp => view.auto_launch_gave_up = true,
        Decision::Nothing | Decision::Launch => {}
    }
}
