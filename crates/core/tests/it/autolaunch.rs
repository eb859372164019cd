//! Work that restarts itself: which desks need a session, and the guard against a launch
//! loop, on a simulated clock.

use std::time::Duration;

use taskkeeper_core::autolaunch::{
    Attempts, Decision, GIVE_UP_AFTER, backoff, decide, has_live_session, has_work,
};
use taskkeeper_core::session::Edge;
use taskkeeper_core::transition::{Event, apply};
use taskkeeper_core::{AgentKind, Session};

use crate::support::{T0, submitted};

#[test]
fn a_desk_has_work_when_a_task_is_queued_or_working_and_not_stalled() {
    let queued = submitted("q", 1);
    let working = apply(&queued, Event::Start, T0).unwrap();
    let stalled = apply(&working, Event::Stall, T0).unwrap();
    let blocked = apply(
        &working,
        Event::WorkerBlocked {
            need: "which port?".into(),
        },
        T0,
    )
    .unwrap();
    let done = apply(
        &working,
        Event::WorkerDone {
            summary: "ok".into(),
        },
        T0,
    )
    .unwrap();
    assert!(has_work([&queued]));
    assert!(has_work([&working]));
    assert!(!has_work([&stalled, &blocked, &done]));
    assert!(has_work([&stalled, &queued]));
    assert!(!has_work([]));

    let mut s = Session::new(
        "s-1".into(),
        "web".parse().unwrap(),
        AgentKind::ClaudeCode,
        "/src/web".into(),
        T0,
    );
    assert!(has_live_session([&s]));
    s.apply(Edge::Ended, T0);
    assert!(!has_live_session([&s]));
}

#[test]
fn the_guard_backs_off_doubling_and_gives_up_after_five_launches_without_progress() {
    let off = decide(false, true, false, Attempts::default(), T0);
    assert_eq!(off, Decision::Nothing, "off by default: nothing");
    assert_eq!(
        decide(true, false, false, Attempts::default(), T0),
        Decision::Nothing
    );
    assert_eq!(
        decide(true, true, true, Attempts::default(), T0),
        Decision::Nothing
    );

    // A session that dies at once, every time: launches at 0, 1, 3, 7, 15 minutes, then none.
    let mut attempts = Attempts::default();
    let mut now = T0;
    let mut launched_at = Vec::new();
    for _ in 0..100 {
        match decide(true, true, false, attempts, now) {
            Decision::Launch => {
                attempts.launched(now);
                launched_at.push(now.since(T0).as_secs() / 60);
            }
            Decision::WaitUntil(at) => {
                assert!(at > now);
                now = at;
            }
            Decision::GaveUp => break,
            Decision::Nothing => panic!("the desk has work and no session"),
        }
    }
    assert_eq!(launched_at, [0, 1, 3, 7, 15]);
    assert_eq!(attempts.count, GIVE_UP_AFTER);
    assert_eq!(
        decide(
            true,
            true,
            false,
            attempts,
            now.plus(Duration::from_secs(86_400))
        ),
        Decision::GaveUp,
        "a day later it still waits for the owner"
    );
    assert_eq!(backoff(1), Duration::from_secs(60));
    assert_eq!(backoff(30), Duration::from_secs(3600), "at most an hour");
}
