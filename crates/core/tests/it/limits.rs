//! The limits against a real store on disk: each is checked inside the write transaction, a
//! refusal changes nothing, and racing callers cannot pass together.

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use taskkeeper_core::limits::{Limit, LimitExceeded};
use taskkeeper_core::session::Edge;
use taskkeeper_core::store::{NewDesk, Synchronous, TaskFilter};
use taskkeeper_core::{
    AgentKind, Event, Message, Session, SessionId, Store, StoreError, StoreOptions, Task,
};

use crate::support::{T0, new_task};

/// Commits synced at checkpoints only: these tests write hundreds of tasks.
fn open(dir: &tempfile::TempDir) -> Store {
    let options = StoreOptions {
        synchronous: Synchronous::Normal,
        ..StoreOptions::default()
    };
    let store = Store::open(&dir.path().join("tasks.db"), options).unwrap();
    store.add_desk(new_desk("web", "/src/web"), T0).unwrap();
    store
}

fn new_desk(name: &str, dir: &str) -> NewDesk {
    NewDesk {
        name: name.parse().unwrap(),
        agent: AgentKind::Generic,
        dir: dir.into(),
        deliver_command: None,
    }
}

fn limit_of(e: &StoreError) -> Option<Limit> {
    match e {
        StoreError::Limit(l) => Some(l.limit()),
        _ => None,
    }
}

/// Everything a refusal must leave as it was.
fn state(store: &Store) -> (Vec<Task>, Vec<Session>, Vec<String>) {
    let desks = store.desks().unwrap();
    (
        store.tasks(&TaskFilter::default()).unwrap(),
        store.sessions(None).unwrap(),
        desks.iter().map(|d| d.name.to_string()).collect(),
    )
}

#[test]
fn an_asker_gets_at_most_its_open_tasks_and_the_next_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    // The default: 100 open tasks per asker (the finding: one asker opened 1,500).
    for i in 0..100 {
        store
            .submit(new_task("web", "flood", &format!("m{i}"), "do it"), T0)
            .unwrap();
    }
    let before = state(&store);
    let e = store
        .submit(new_task("web", "flood", "m100", "one more"), T0)
        .unwrap_err();
    assert_eq!(limit_of(&e), Some(Limit::OpenTasksPerAsker), "{e}");
    assert!(
        e.to_string().contains("limits.open_tasks_per_asker (100)"),
        "{e}"
    );
    assert_eq!(state(&store), before, "the refusal changed nothing");

    // A resend of a task it has is still answered; another asker is not held back.
    assert!(
        !store
            .submit(new_task("web", "flood", "m7", "do it"), T0)
            .unwrap()
            .changed
    );
    store
        .submit(new_task("web", "other", "m0", "mine"), T0)
        .unwrap();

    // An ended task frees a place.
    let first = before.0.iter().find(|t| t.asker == "flood").unwrap();
    store
        .apply(&first.id, Event::Cancel { reason: None }, T0)
        .unwrap();
    store
        .submit(new_task("web", "flood", "m100", "one more"), T0)
        .unwrap();
}

#[test]
fn askers_racing_for_the_last_places_cannot_pass_together() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open(&dir));
    store
        .set_setting("limits.open_tasks_per_asker", "5")
        .unwrap();
    let handles: Vec<_> = (0..24)
        .map(|i| {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                store
                    .submit(new_task("web", "racer", &format!("m{i}"), "go"), T0)
                    .map_err(|e| limit_of(&e))
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 5);
    assert!(
        results
            .iter()
            .filter_map(|r| r.as_ref().err())
            .all(|l| *l == Some(Limit::OpenTasksPerAsker))
    );
}

#[test]
fn messages_and_follow_ups_past_the_size_limits_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    store.set_setting("limits.message_bytes", "1KiB").unwrap();
    store.set_setting("limits.task_bytes", "4KiB").unwrap();

    let e = store
        .submit(new_task("web", "a", "big", &"x".repeat(1100)), T0)
        .unwrap_err();
    assert_eq!(limit_of(&e), Some(Limit::MessageBytes), "{e}");
    assert!(store.tasks(&TaskFilter::default()).unwrap().is_empty());

    let task = store
        .submit(new_task("web", "a", "m0", "start"), T0)
        .unwrap()
        .task;
    // Follow-ups of ~900 bytes each: the task grows until the next would pass 4 KiB.
    let mut accepted = 0;
    let refusal = loop {
        let message = Message::user_text(format!("f{accepted}"), "y".repeat(850));
        let before = state(&store);
        match store.apply(&task.id, Event::FollowUp { message }, T0) {
            Ok(_) => accepted += 1,
            Err(e) => {
                assert_eq!(state(&store), before, "the refusal changed nothing");
                break e;
            }
        }
        assert!(accepted < 10, "the task limit never held");
    };
    assert_eq!(limit_of(&refusal), Some(Limit::TaskBytes), "{refusal}");
    assert!(refusal.to_string().contains(task.id.as_str()), "{refusal}");
    assert!(accepted >= 2, "{accepted} follow-ups fit");
    let kept = store.task(&task.id).unwrap().unwrap();
    assert!(taskkeeper_core::limits::task_size(&kept) <= 4096);

    // A resend of a follow-up the task has changes nothing and is not refused.
    let again = Message::user_text("f0", "y".repeat(850));
    assert!(
        !store
            .apply(&task.id, Event::FollowUp { message: again }, T0)
            .unwrap()
            .changed
    );
}

fn session(id: &str, desk: &str) -> Session {
    Session::new(
        SessionId::from(id),
        desk.parse().unwrap(),
        AgentKind::Generic,
        "/src/web".into(),
        T0,
    )
}

fn end(store: &Store, id: &str, at: taskkeeper_core::Timestamp) {
    store
        .update_session(&SessionId::from(id), move |s| {
            s.apply(Edge::Ended, at);
            (true, ())
        })
        .unwrap()
        .unwrap();
}

fn session_ids(store: &Store) -> Vec<String> {
    let mut ids: Vec<String> = store
        .sessions(None)
        .unwrap()
        .into_iter()
        .map(|s| s.id.to_string())
        .collect();
    ids.sort();
    ids
}

#[test]
fn ended_sessions_are_pruned_after_the_keep_time() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let day = Duration::from_secs(86_400);
    for id in ["live", "ended"] {
        store.add_session(session(id, "web"), None, T0).unwrap();
    }
    assert_eq!(store.next_session_prune_at(day).unwrap(), None);
    end(&store, "ended", T0);
    assert_eq!(
        store.next_session_prune_at(day).unwrap(),
        Some(T0.plus(day))
    );
    assert_eq!(store.prune_ended_sessions(T0.plus(day), day).unwrap(), 0);
    assert_eq!(
        store
            .prune_ended_sessions(T0.plus(day + Duration::from_secs(1)), day)
            .unwrap(),
        1
    );
    assert_eq!(session_ids(&store), ["live"]);
}

#[test]
fn sessions_are_bounded_and_the_oldest_ended_one_makes_room() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    store.set_setting("sessions.max", "3").unwrap();
    for id in ["s1", "s2", "s3"] {
        store.add_session(session(id, "web"), None, T0).unwrap();
    }
    let before = state(&store);
    let e = store
        .add_session(session("s4", "web"), None, T0)
        .unwrap_err();
    assert_eq!(limit_of(&e), Some(Limit::Sessions), "{e}");
    assert!(e.to_string().contains("sessions.max (3)"), "{e}");
    assert_eq!(state(&store), before, "the refusal changed nothing");

    end(&store, "s2", T0.plus(Duration::from_secs(5)));
    end(&store, "s1", T0.plus(Duration::from_secs(9)));
    store.add_session(session("s4", "web"), None, T0).unwrap();
    assert_eq!(session_ids(&store), ["s1", "s3", "s4"], "s2 ended first");
    // A session already there is returned as it is, taking no place.
    let again = store.add_session(session("s4", "web"), None, T0).unwrap();
    assert_eq!(again.id.as_str(), "s4");
    assert_eq!(session_ids(&store), ["s1", "s3", "s4"]);
}

#[test]
fn sessions_create_desks_only_below_the_bound_and_a_refusal_makes_neither() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    store.set_setting("sessions.create_desks_max", "2").unwrap();
    store
        .add_session(session("s1", "api"), Some(new_desk("api", "/src/api")), T0)
        .unwrap();
    assert_eq!(store.desks().unwrap().len(), 2);

    let before = state(&store);
    let e = store
        .add_session(
            session("s2", "docs"),
            Some(new_desk("docs", "/src/docs")),
            T0,
        )
        .unwrap_err();
    assert!(
        matches!(
            &e,
            StoreError::Limit(LimitExceeded::CreateDesks { desks: 2, max: 2 })
        ),
        "{e}"
    );
    assert!(e.to_string().contains("sessions.create_desks_max"), "{e}");
    assert_eq!(state(&store), before, "no desk and no session");

    // Another session of the same new directory finds the desk made a moment ago.
    store
        .add_session(session("s3", "api"), Some(new_desk("api", "/src/api")), T0)
        .unwrap();
    // The owner is not bounded: the owner's own desks come from `add_desk`.
    store.add_desk(new_desk("docs", "/src/docs"), T0).unwrap();
}
