//! Offering the digest: at login (each start of the daemon) or at a time of day
//! (`digest.at`), one notice with the digest's counts, when it has anything to say. What the
//! digest holds is `core::digest`'s; when to offer it is `core::digest::offer_due`'s; the
//! store keeps when it was last offered, so a restart does not offer the same one twice and
//! a time missed while the machine was off is offered once when it runs again.

use std::sync::Arc;
use std::time::Duration;

use taskkeeper_core::Timestamp;
use taskkeeper_core::digest;
use tokio::sync::{Notify, watch};

use crate::notify::{Notice, Notifier};
use crate::owner::OwnerService;

/// The longest sleep before the next offer (the wall clock may jump, the machine sleep).
const CAP: Duration = Duration::from_secs(600);

/// The local time's offset from UTC in seconds, as the machine has it now.
pub(crate) fn local_offset_s() -> i32 {
    use chrono::Offset as _;
    chrono::Local::now().offset().fix().local_minus_utc()
}

/// Offer now if due; returns the next due time.
async fn offer(
    owner: &OwnerService,
    notifier: &dyn Notifier,
    started: Timestamp,
    utc_offset_s: i32,
) -> Option<Timestamp> {
    let now = owner.tasks().now();
    let read = owner.tasks().marks().digest_offer().await;
    let (at, last) = match read {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(error = %e, "could not read when the digest is due");
            return Some(now.plus(CAP));
        }
    };
    let due = digest::offer_due(at, last, started, now, utc_offset_s)?;
    if due > now {
        return Some(due);
    }
    match owner.digest_counts().await {
        Ok(counts) => {
            if let Err(e) = owner.tasks().marks().offered(now).await {
                tracing::warn!(error = %e, "could not record the digest's offer");
                return Some(now.plus(CAP));
            }
            if !counts.is_empty() {
                notifier.notice(Notice::Digest { counts });
            }
        }
        Err(e) => tracing::warn!(error = %e, "could not make the digest"),
    }
    digest::offer_due(at, Some(now), started, now, utc_offset_s).filter(|d| *d > now)
}

/// The loop, until `stop`: wakes when due, when a setting changes, or when poked.
pub(crate) async fn run(
    owner: OwnerService,
    notifier: Arc<dyn Notifier>,
    wake: Arc<Notify>,
    utc_offset_s: Option<i32>,
    mut stop: watch::Receiver<bool>,
) {
    let started = owner.tasks().now();
    let mut settings = owner.settings_changes();
    loop {
        let offset = utc_offset_s.unwrap_or_else(local_offset_s);
        let next = offer(&owner, notifier.as_ref(), started, offset).await;
        let sleep = next.map_or(CAP, |due| {
            due.since(owner.tasks().now()).clamp(Duration::ZERO, CAP)
        });
        tokio::select! {
            () = tokio::time::sleep(sleep) => {}
            _ = settings.changed() => {}
            () = wake.notified() => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}
