//! The digest of a scripted day, checked exactly; and when the digest is offered.

use std::time::Duration;

use taskkeeper_core::digest::{Counts, OfferAt, digest, offer_due};
use taskkeeper_core::transition::{Event, apply};
use taskkeeper_core::{Task, TaskId, Timestamp};

use crate::support::new_task;

/// Midnight UTC of the scripted day.
const DAY: Timestamp = Timestamp::from_millis(1_796_083_200_000);

fn at(h: u64, m: u64) -> Timestamp {
    DAY.plus(Duration::from_secs(h * 3600 + m * 60))
}

/// A task of `asker` submitted at `created`, then each event at its time.
fn scripted(id: &str, asker: &str, created: Timestamp, events: &[(Event, Timestamp)]) -> Task {
    let mut t = Task::submit(
        TaskId::from(id),
        new_task("web", asker, &format!("m-{id}"), &format!("request {id}")),
        0,
        created,
    );
    t = apply(&t, Event::Start, created).unwrap();
    t = apply(&t, Event::Delivered { to: None }, created).unwrap();
    for (e, when) in events {
        t = apply(&t, e.clone(), *when).unwrap();
    }
    t
}

fn done() -> Event {
    Event::WorkerDone {
        summary: "done".into(),
    }
}

fn ids(tasks: &[&Task]) -> Vec<String> {
    tasks.iter().map(|t| t.id.to_string()).collect()
}

/// The owner took the last digest at 08:00 and asks again at 12:00.
#[test]
fn the_digest_of_a_scripted_day_is_exactly_this() {
    let tasks = vec![
        // Finished in the window; its asker has not acknowledged it.
        scripted("a", "ci", at(7, 0), &[(done(), at(9, 0))]),
        // Finished and acknowledged before the window: in no list.
        scripted(
            "b",
            "ci",
            at(6, 0),
            &[(done(), at(7, 30)), (Event::Acknowledge, at(7, 45))],
        ),
        // Finished before the window, never acknowledged: still pending.
        scripted("c", "review", at(6, 0), &[(done(), at(7, 40))]),
        // The owner's own task: finished, and nobody acknowledges it.
        scripted("d", "owner", at(9, 0), &[(done(), at(10, 0))]),
        // Reminded twice in the window, then stalled in it.
        scripted(
            "e",
            "ci",
            at(8, 0),
            &[
                (Event::Remind, at(8, 30)),
                (Event::Remind, at(8, 31)),
                (Event::Stall, at(9, 10)),
            ],
        ),
        // Stalled before the window and still stalled.
        scripted("f", "ci", at(5, 0), &[(Event::Stall, at(7, 0))]),
        // Waits on the owner; one reminder before the window, one in it.
        scripted(
            "g",
            "ci",
            at(7, 0),
            &[
                (Event::Remind, at(7, 50)),
                (Event::Remind, at(8, 10)),
                (Event::OwnerWait { waiting: true }, at(11, 0)),
            ],
        ),
        // Canceled in the window.
        scripted(
            "h",
            "review",
            at(10, 0),
            &[(Event::Cancel { reason: None }, at(11, 0))],
        ),
        // Stalled in the window, then resumed and finished: it ended in the window, and its
        // stall is over.
        scripted(
            "i",
            "owner",
            at(8, 0),
            &[
                (Event::Stall, at(8, 20)),
                (Event::Resume, at(8, 40)),
                (done(), at(11, 30)),
            ],
        ),
    ];
    let d = digest(&tasks, Some(at(8, 0)), at(12, 0));
    assert_eq!(d.since, Some(at(8, 0)));
    assert_eq!(d.until, at(12, 0));
    assert_eq!(ids(&d.stalled), ["f", "e"]);
    assert_eq!(ids(&d.finished), ["a", "d", "h", "i"]);
    assert_eq!(ids(&d.waiting_on_owner), ["g"]);
    assert_eq!(ids(&d.ack_pending), ["c", "a", "h"]);
    let reminders: Vec<(String, Timestamp)> = d
        .reminders
        .iter()
        .map(|r| (r.task.id.to_string(), r.at))
        .collect();
    assert_eq!(
        reminders,
        [
            ("g".to_owned(), at(8, 10)),
            ("e".to_owned(), at(8, 30)),
            ("e".to_owned(), at(8, 31)),
        ]
    );
    assert_eq!(
        d.counts(),
        Counts {
            stalled: 2,
            finished: 4,
            waiting_on_owner: 1,
            ack_pending: 3,
            reminders: 3,
        }
    );

    // The first digest ever counts everything the store keeps.
    let first = digest(&tasks, None, at(12, 0));
    assert_eq!(ids(&first.finished), ["b", "c", "a", "d", "h", "i"]);
    assert_eq!(first.reminders.len(), 4);
    // Right after it was taken, nothing is new; what is still true stays.
    let again = digest(&tasks, Some(at(12, 0)), at(12, 0));
    assert_eq!(
        again.counts(),
        Counts {
            stalled: 2,
            finished: 0,
            waiting_on_owner: 1,
            ack_pending: 3,
            reminders: 0,
        }
    );
}

#[test]
fn the_offer_time_parses_and_refuses_what_is_not_a_time() {
    assert_eq!("off".parse(), Ok(OfferAt::Off));
    assert_eq!("login".parse(), Ok(OfferAt::Login));
    assert_eq!("08:30".parse(), Ok(OfferAt::Daily(510)));
    assert_eq!(OfferAt::Daily(510).to_string(), "08:30");
    for bad in ["8:30", "24:00", "08:60", "noon", "", "08:30:00", "-1:00"] {
        assert!(bad.parse::<OfferAt>().is_err(), "{bad:?}");
    }
    let mut s = taskkeeper_core::settings::Settings::default();
    assert_eq!(s.get("digest.at").unwrap(), "login");
    let e = s.set("digest.at", "8am").unwrap_err().to_string();
    assert!(e.contains("digest.at") && e.contains("08:30"), "{e}");
    assert_eq!(
        s.get("digest.at").unwrap(),
        "login",
        "a refusal changes nothing"
    );
    s.set("digest.at", "07:05").unwrap();
    assert_eq!(s.get("digest.at").unwrap(), "07:05");
}

#[test]
fn the_digest_is_offered_at_login_once_and_daily_at_its_local_time() {
    let started = at(9, 0);
    // At login: once per start of the daemon.
    assert_eq!(
        offer_due(OfferAt::Login, Some(at(8, 0)), started, at(9, 0), 0),
        Some(started)
    );
    assert_eq!(
        offer_due(OfferAt::Login, Some(at(9, 0)), started, at(9, 5), 0),
        None
    );
    assert_eq!(offer_due(OfferAt::Off, None, started, at(9, 0), 0), None);
    // Daily at 08:30 UTC: offered today already, so tomorrow.
    let daily = OfferAt::Daily(8 * 60 + 30);
    assert_eq!(
        offer_due(daily, Some(at(8, 30)), started, at(9, 0), 0),
        Some(at(32, 30))
    );
    // Missed today (the machine was off at 08:30): offered now, as of 08:30.
    assert_eq!(
        offer_due(
            daily,
            Some(at(0, 0).minus(Duration::from_secs(3600))),
            started,
            at(9, 0),
            0
        ),
        Some(at(8, 30))
    );
    // Before today's time, offered yesterday: today at 08:30.
    assert_eq!(
        offer_due(
            daily,
            Some(at(8, 30).minus(Duration::from_secs(86_400))),
            started,
            at(7, 0),
            0
        ),
        Some(at(8, 30))
    );
    // Local time two hours east of UTC: 08:30 local is 06:30 UTC.
    assert_eq!(
        offer_due(daily, Some(at(6, 30)), started, at(7, 0), 7200),
        Some(at(30, 30))
    );
    assert_eq!(
        offer_due(daily, Some(at(6, 0)), started, at(7, 0), 7200),
        Some(at(6, 30))
    );
}
