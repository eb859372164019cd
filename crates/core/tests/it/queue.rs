//! Which queued task a desk starts next.

use taskkeeper_core::queue::{holds_desk, next_to_start};
use taskkeeper_core::{TaskState, Timestamp};

use crate::support::submitted;

#[test]
fn first_in_first_out_while_nothing_holds_the_desk() {
    let tasks = vec![submitted("c", 3), submitted("a", 1), submitted("b", 2)];
    assert_eq!(next_to_start(&tasks).map(|t| t.id.as_str()), Some("a"));
}

#[test]
fn a_working_task_holds_the_desk_until_it_is_blocked_or_stalls() {
    let mut working = submitted("w", 1);
    working.status.state = TaskState::Working;
    let queued = submitted("q", 2);
    assert!(holds_desk(&working));
    assert_eq!(next_to_start([&working, &queued]), None);

    let mut blocked = working.clone();
    blocked.status.state = TaskState::InputRequired;
    assert!(!holds_desk(&blocked));
    assert_eq!(
        next_to_start([&blocked, &queued]).map(|t| t.id.as_str()),
        Some("q")
    );

    let mut stalled = working.clone();
    stalled.stalled_at = Some(Timestamp::from_millis(1));
    assert!(!holds_desk(&stalled));
    assert_eq!(
        next_to_start([&stalled, &queued]).map(|t| t.id.as_str()),
        Some("q")
    );
}

/// Which session may end a task: only the one it was handed to, never another session of the
/// same desk (not even while it is the desk's current task), a queued or undelivered one, or
/// another desk's. When that session ends the task goes back and is handed again.
#[test]
fn a_session_ends_only_what_it_was_handed() {
    use taskkeeper_core::queue::{NotHeld, session_may_end};
    use taskkeeper_core::{AgentKind, Event, Session, SessionId, transition::apply};
    let at = Timestamp::from_millis(1);
    let session = |id: &str, desk: &str| {
        Session::new(
            SessionId::from(id),
            desk.parse().unwrap(),
            AgentKind::ClaudeCode,
            "/src".into(),
            at,
        )
    };
    let (mine, other_of_desk, elsewhere) = (
        session("s-1", "web"),
        session("s-2", "web"),
        session("s-3", "api"),
    );
    let queued = submitted("q", 2);
    assert!(matches!(
        session_may_end(&queued, &mine),
        Err(NotHeld::NotDelivered { .. })
    ));
    let working = apply(&submitted("w", 1), Event::Start, at).unwrap();
    assert!(matches!(
        session_may_end(&working, &mine),
        Err(NotHeld::NotDelivered { .. })
    ));
    let handed = apply(
        &working,
        Event::Delivered {
            to: Some(mine.id.clone()),
        },
        at,
    )
    .unwrap();
    assert_eq!(session_may_end(&handed, &mine), Ok(()));
    // The desk's current task, but handed to another session of the desk: refused.
    assert_eq!(
        session_may_end(&handed, &other_of_desk),
        Err(NotHeld::OtherSession {
            task: handed.id.clone(),
            other: mine.id.clone(),
        })
    );
    assert!(matches!(
        session_may_end(&handed, &elsewhere),
        Err(NotHeld::OtherDesk { .. })
    ));
    // A follow-up not yet delivered: still the session's.
    let followed = apply(
        &handed,
        Event::FollowUp {
            message: taskkeeper_core::Message::user_text("m-2", "And the docs"),
        },
        at,
    )
    .unwrap();
    assert_eq!(session_may_end(&followed, &mine), Ok(()));
    // Blocked, it frees the desk: only the session it was handed to ends it.
    let blocked = apply(
        &handed,
        Event::WorkerBlocked {
            need: "Which name?".into(),
        },
        at,
    )
    .unwrap();
    assert_eq!(session_may_end(&blocked, &mine), Ok(()));
    assert!(matches!(
        session_may_end(&blocked, &other_of_desk),
        Err(NotHeld::OtherSession { .. })
    ));
    // Handed over by the desk's command, which names no session.
    let by_command = apply(&working, Event::Delivered { to: None }, at).unwrap();
    assert_eq!(session_may_end(&by_command, &other_of_desk), Ok(()));
}

/// A session that ends gives back what it was handed: the task keeps its place (it still
/// holds the desk), waits to be handed again, and only the session it is handed to next may
/// end it. What was not handed to the ended session stays as it is.
#[test]
fn a_task_goes_back_when_the_session_it_was_handed_to_ends() {
    use taskkeeper_core::queue::{NotHeld, goes_back, holds_desk, session_may_end};
    use taskkeeper_core::{AgentKind, Event, Session, SessionId, transition::apply};
    let at = Timestamp::from_millis(1);
    let session = |id: &str| {
        Session::new(
            SessionId::from(id),
            "web".parse().unwrap(),
            AgentKind::ClaudeCode,
            "/src".into(),
            at,
        )
    };
    let (first, next) = (session("s-1"), session("s-2"));
    let working = apply(&submitted("w", 1), Event::Start, at).unwrap();
    let handed = apply(
        &working,
        Event::Delivered {
            to: Some(first.id.clone()),
        },
        at,
    )
    .unwrap();
    let handed = apply(&handed, Event::Remind, at).unwrap();
    assert!(goes_back(&handed, &first.id));
    assert!(!goes_back(&handed, &next.id), "not the next session's");
    assert!(!goes_back(&working, &first.id), "never handed to it");
    let back = |t: &taskkeeper_core::Task, from: &Session| {
        apply(
            t,
            Event::HandBack {
                from: from.id.clone(),
            },
            at,
        )
        .unwrap()
    };
    assert_eq!(back(&handed, &next), handed, "not its own: nothing changes");

    let given_back = back(&handed, &first);
    assert!(holds_desk(&given_back), "it keeps its place");
    assert!(given_back.to_deliver(), "it waits to be handed again");
    assert_eq!(given_back.reminders_sent, 0, "a new session, a new ladder");
    for s in [&first, &next] {
        assert!(
            matches!(
                session_may_end(&given_back, s),
                Err(NotHeld::NotDelivered { .. })
            ),
            "{}",
            s.id
        );
    }
    let again = apply(
        &given_back,
        Event::Delivered {
            to: Some(next.id.clone()),
        },
        at,
    )
    .unwrap();
    assert_eq!(session_may_end(&again, &next), Ok(()));
    assert!(matches!(
        session_may_end(&again, &first),
        Err(NotHeld::OtherSession { .. })
    ));

    // A blocked task goes back too: the asker's answer is handed to the next session.
    let blocked = apply(
        &handed,
        Event::WorkerBlocked {
            need: "Which name?".into(),
        },
        at,
    )
    .unwrap();
    assert!(goes_back(&blocked, &first.id));
    let answered = apply(
        &back(&blocked, &first),
        Event::FollowUp {
            message: taskkeeper_core::Message::user_text("m-2", "Call it x"),
        },
        at,
    )
    .unwrap();
    assert!(answered.to_deliver() && answered.delivered_to.is_none());
    // An ended task stays as it ended.
    let done = apply(
        &handed,
        Event::WorkerDone {
            summary: "Done".into(),
        },
        at,
    )
    .unwrap();
    assert!(!goes_back(&done, &first.id));
    assert_eq!(back(&done, &first), done);
}
