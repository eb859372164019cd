//! Work that restarts itself: the loop that carries out `core::autolaunch` for the desks the
//! owner set to launch a session by themselves. It launches through the owner service (the
//! same launch the window's and the CLI's Launch use) and keeps each desk's attempts in
//! memory, so a restart of the daemon starts afresh (that is what brings work back after a
//! reboot) while a session that dies at once cannot start a launch loop.
//!
//! Event-driven like the watchdog: it looks again when a task of a desk set to launch or a
//! session changes, when the owner changes a desk, or when the guard's wait ends; with
//! nothing held it sleeps. Which desks are set to launch it knows from the store's memory
//! (until a write of a desk), so a change elsewhere, and every change while no desk is set,
//! costs it no trip to the store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use taskkeeper_core::autolaunch::{self, Attempts, Decision};
use taskkeeper_core::{DeskName, Timestamp};
use tokio::sync::{Notify, watch};

use crate::owner::OwnerService;

/// Each desk's launches by itself since its work last moved, and the loop's wake.
#[derive(Debug, Default)]
pub(crate) struct AutoLaunches {
    attempts: Mutex<HashMap<DeskName, Attempts>>,
    wake: Notify,
    /// Looks done so far: a test waits on it to know the loop has looked since it asked.
    looks: std::sync::atomic::AtomicU64,
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

    pub(crate) fn looks(&self) -> u64 {
        self.looks.load(std::sync::atomic::Ordering::SeqCst)
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
    // This runs after changes of the desks set to launch: it reads only those desks (from
    // memory, or their index), and of each whether it has work (two index lookups) and its
    // sessions, never the tasks. With none set, nothing is read at all.
    if owner
        .tasks()
        .desks()
        .cached_auto_launch()
        .is_some_and(|desks| desks.is_empty())
    {
        return None;
    }
    let read = owner.tasks().desks().auto_launch_work().await;
    let desks = match read {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(error = %e, "auto-launch could not read the desks; trying again soon");
            return Some(now.plus(CAP));
        }
    };
    let launches = owner.auto_launches();
    let mut next: Option<Timestamp> = None;
    for (desk, work, live) in desks {
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
        launches
            .looks
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let sleep = next.map(|due| due.since(owner.tasks().now()).clamp(Duration::ZERO, CAP));
        let changed = async {
            loop {
                tokio::select! {
                    task = feed.recv() => match task {
                        Ok(t) => {
                            // A task that ended moved its desk's work: its guard starts afresh.
                            if !t.is_open() {
                                launches.reset(&t.desk);
                            }
                            if concerns(&owner, &t.desk) {
                                return;
                            }
                        }
                        // Fell behind, or the daemon is going: look.
                        Err(_) => return,
                    },
                    _ = sessions.changed() => return,
                    () = launches.wake.notified() => return,
                }
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

/// Whether a change of a task of `desk` may concern the loop: the desk is set to launch, or
/// the store does not have the set in memory (then a look reads it).
fn concerns(owner: &OwnerService, desk: &DeskName) -> bool {
    owner
        .tasks()
        .desks()
        .cached_auto_launch()
        .is_none_or(|desks| desks.iter().any(|d| d.name == *desk))
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
