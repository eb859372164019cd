//! The store against a real SQLite file on disk.

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use taskkeeper_core::store::{NewDesk, StateFilter, Synchronous, TaskFilter};
use taskkeeper_core::{
    AgentKind, Event, Store, StoreError, StoreOptions, TaskId, TaskState, TransitionError,
};

use crate::support::{T0, new_task};

fn open(dir: &tempfile::TempDir) -> Store {
    Store::open(&dir.path().join("tasks.db"), StoreOptions::default()).unwrap()
}

fn with_desk(store: &Store, name: &str) {
    store
        .add_desk(
            NewDesk {
                name: name.parse().unwrap(),
                agent: AgentKind::ClaudeCode,
                dir: "/src/web".into(),
                deliver_command: None,
            },
            T0,
        )
        .unwrap();
}

#[test]
fn a_desk_works_on_one_task_at_a_time_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    with_desk(&store, "web");

    let first = store
        .submit(new_task("web", "a", "m1", "first"), T0)
        .unwrap()
        .task;
    let second = store
        .submit(new_task("web", "a", "m2", "second"), T0)
        .unwrap()
        .task;
    let third = store
        .submit(new_task("web", "b", "m3", "third"), T0)
        .unwrap()
        .task;
    assert_eq!(first.state(), TaskState::Working);
    assert_eq!(
        (second.state(), second.queue_position),
        (TaskState::Submitted, Some(1))
    );
    assert_eq!(third.queue_position, Some(2));

    // Blocked frees the desk: the next starts.
    let blocked = store
        .apply(
            &first.id,
            Event::WorkerBlocked {
                need: "which?".into(),
            },
            T0,
        )
        .unwrap();
    assert_eq!(
        blocked
            .others
            .iter()
            .map(|t| t.id.clone())
            .collect::<Vec<_>>(),
        vec![second.id.clone()]
    );
    assert_eq!(
        store.task(&third.id).unwrap().unwrap().queue_position,
        Some(1)
    );

    // Stalled frees it too.
    store.apply(&second.id, Event::Stall, T0).unwrap();
    assert_eq!(
        store.task(&third.id).unwrap().unwrap().state(),
        TaskState::Working
    );

    // Finished tasks leave the open list.
    store
        .apply(
            &third.id,
            Event::WorkerDone {
                summary: "ok".into(),
            },
            T0,
        )
        .unwrap();
    let open = store
        .tasks(&TaskFilter {
            state: StateFilter::Open,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(
        open.iter().map(|t| t.id.clone()).collect::<Vec<_>>(),
        vec![first.id, second.id]
    );
    let ended = store
        .tasks(&TaskFilter {
            state: StateFilter::Ended,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(ended.len(), 1);
}

#[test]
fn resending_the_same_message_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    with_desk(&store, "web");
    let a = store
        .submit(new_task("web", "alice", "m-1", "do it"), T0)
        .unwrap();
    let again = store
        .submit(new_task("web", "alice", "m-1", "do it"), T0)
        .unwrap();
    assert!(a.changed && !again.changed);
    assert_eq!(a.task.id, again.task.id);
    // The same messageId from another asker is another task.
    let bob = store
        .submit(new_task("web", "bob", "m-1", "do it"), T0)
        .unwrap();
    assert_ne!(bob.task.id, a.task.id);
    assert_eq!(store.tasks(&TaskFilter::default()).unwrap().len(), 2);
}

#[test]
fn refusals_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    with_desk(&store, "web");
    let t = store
        .submit(new_task("web", "a", "m1", "x"), T0)
        .unwrap()
        .task;
    store
        .apply(
            &t.id,
            Event::WorkerDone {
                summary: "ok".into(),
            },
            T0,
        )
        .unwrap();
    let before = store.task(&t.id).unwrap();

    let err = store
        .apply(&t.id, Event::Cancel { reason: None }, T0)
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Transition(TransitionError::NotCancelable { .. })
        ),
        "{err}"
    );
    assert_eq!(store.task(&t.id).unwrap(), before);

    let err = store
        .apply(&TaskId::from("nope"), Event::Start, T0)
        .unwrap_err();
    assert_eq!(err, StoreError::NoSuchTask(TaskId::from("nope")));
    let err = store
        .submit(new_task("nowhere", "a", "m2", "x"), T0)
        .unwrap_err();
    assert!(err.to_string().contains("no desk named nowhere"), "{err}");
    let err = store.remove_desk(&"web".parse().unwrap());
    assert!(err.is_ok(), "a desk with only ended tasks can go: {err:?}");
}

/// Acting on a task as it was read: a newer version (a follow-up meanwhile) is refused and
/// nothing changes; the version read is accepted.
#[test]
fn apply_at_refuses_a_task_that_changed_since_it_was_read() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    with_desk(&store, "web");
    let read = store
        .submit(new_task("web", "a", "m1", "x"), T0)
        .unwrap()
        .task;
    store
        .apply(&read.id, Event::OwnerWait { waiting: true }, T0)
        .unwrap();
    let now = store.task(&read.id).unwrap().unwrap();
    assert!(now.version > read.version);

    let err = store
        .apply_at(&read.id, read.version, Event::Delivered { to: None }, T0)
        .unwrap_err();
    assert_eq!(err, StoreError::Conflict(read.id.clone()));
    assert_eq!(
        store.task(&read.id).unwrap().unwrap(),
        now,
        "nothing changed"
    );

    let done = store
        .apply_at(&read.id, now.version, Event::Delivered { to: None }, T0)
        .unwrap();
    assert!(done.changed && done.task.delivered_at.is_some());
}

#[test]
fn a_desk_with_open_tasks_cannot_be_removed() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    with_desk(&store, "web");
    store.submit(new_task("web", "a", "m1", "x"), T0).unwrap();
    let err = store.remove_desk(&"web".parse().unwrap()).unwrap_err();
    assert!(err.to_string().contains("1 open task"), "{err}");
    assert_eq!(store.desks().unwrap().len(), 1);
    let err = store
        .add_desk(
            NewDesk {
                name: "web".parse().unwrap(),
                agent: AgentKind::Generic,
                dir: "/x".into(),
                deliver_command: None,
            },
            T0,
        )
        .unwrap_err();
    assert!(matches!(err, StoreError::DeskExists(_)));
}

#[test]
fn everything_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let id;
    {
        let store = open(&dir);
        with_desk(&store, "web");
        id = store
            .submit(new_task("web", "a", "m1", "x"), T0)
            .unwrap()
            .task
            .id;
        store
            .apply(&id, Event::Remind, T0.plus(Duration::from_secs(300)))
            .unwrap();
        store.set_setting("reminders.ladder", "10s,20s").unwrap();
    }
    let store = open(&dir);
    let t = store.task(&id).unwrap().unwrap();
    assert_eq!(
        (t.state(), t.reminders_sent, t.version),
        (TaskState::Working, 1, 3)
    );
    assert_eq!(
        store.settings().unwrap().get("reminders.ladder").unwrap(),
        "10s,20s"
    );
    assert_eq!(store.integrity_check().unwrap(), "ok");
}

#[test]
fn invalid_settings_are_refused_and_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let err = store
        .set_setting("reminders.hourly_cap", "lots")
        .unwrap_err();
    assert!(err.to_string().contains("reminders.hourly_cap"), "{err}");
    assert_eq!(store.settings().unwrap().hourly_cap, 6);
}

#[test]
fn ended_tasks_are_pruned_after_the_keep_time() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    with_desk(&store, "web");
    let old = store
        .submit(new_task("web", "a", "m1", "x"), T0)
        .unwrap()
        .task;
    store
        .apply(
            &old.id,
            Event::WorkerDone {
                summary: "ok".into(),
            },
            T0,
        )
        .unwrap();
    let day = Duration::from_secs(86_400);
    let young = store
        .submit(new_task("web", "a", "m2", "y"), T0)
        .unwrap()
        .task;
    store
        .apply(
            &young.id,
            Event::WorkerFailed { why: "no".into() },
            T0.plus(3 * day),
        )
        .unwrap();
    let open = store
        .submit(new_task("web", "a", "m3", "z"), T0)
        .unwrap()
        .task;

    let keep = 7 * day;
    assert_eq!(store.next_prune_at(keep).unwrap(), Some(T0.plus(keep)));
    assert_eq!(
        store.prune_ended(T0.plus(keep), keep).unwrap(),
        0,
        "not before the keep time"
    );
    assert_eq!(store.prune_ended(T0.plus(8 * day), keep).unwrap(), 1);
    assert!(store.task(&old.id).unwrap().is_none());
    assert!(store.task(&young.id).unwrap().is_some());
    assert!(store.task(&open.id).unwrap().is_some());
}

#[test]
fn concurrent_writers_share_commits_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        Store::open(
            &dir.path().join("tasks.db"),
            StoreOptions {
                synchronous: Synchronous::Normal,
                readers: 4,
            },
        )
        .unwrap(),
    );
    with_desk(&store, "web");
    let handles: Vec<_> = (0..8)
        .map(|w| {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                for i in 0..25 {
                    let t = store
                        .submit(new_task("web", &format!("w{w}"), &format!("m{i}"), "x"), T0)
                        .unwrap();
                    store
                        .apply(&t.task.id, Event::Cancel { reason: None }, T0)
                        .unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let all = store.tasks(&TaskFilter::default()).unwrap();
    assert_eq!(all.len(), 200);
    assert!(all.iter().all(|t| t.state() == TaskState::Canceled));
}

#[test]
fn a_second_store_on_the_same_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _first = open(&dir);
    let err = Store::open(&dir.path().join("tasks.db"), StoreOptions::default()).unwrap_err();
    assert!(matches!(err, StoreError::Locked { .. }), "{err}");
    assert!(err.to_string().contains("another Taskkeeper"), "{err}");
}

#[test]
fn a_file_that_is_not_a_database_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.db");
    let garbage = b"this is a shopping list, not a database\n".repeat(200);
    std::fs::write(&path, &garbage).unwrap();
    let err = Store::open(&path, StoreOptions::default()).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("left untouched"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), garbage);
    assert!(!dir.path().join("tasks.db-wal").exists());
}

#[test]
fn a_damaged_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.db");
    {
        let store = open(&dir);
        with_desk(&store, "web");
        // Four askers, each within limits.open_tasks_per_asker.
        for i in 0..200 {
            store
                .submit(
                    new_task(
                        "web",
                        &format!("a{}", i % 4),
                        &format!("m{i}"),
                        &"long request ".repeat(40),
                    ),
                    T0,
                )
                .unwrap();
        }
    }
    // Keep the header, scribble over the pages behind it.
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 8192);
    for b in bytes.iter_mut().skip(100).step_by(7) {
        *b = 0xA5;
    }
    std::fs::write(&path, &bytes).unwrap();
    let err = Store::open(&path, StoreOptions::default()).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "the damaged file must not be touched"
    );
}

#[test]
fn the_queue_order_query_uses_the_open_task_index() {
    // With ended tasks piling up, finding the next queue position must not walk them all.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.db");
    drop(open(&dir));
    let _store = Store::open(&path, StoreOptions::default()).unwrap();
    let c =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let plan: Vec<String> = c
        .prepare("EXPLAIN QUERY PLAN SELECT COALESCE(MAX(queue_seq), 0) + 1 FROM tasks WHERE desk = ?1 AND ended_at IS NULL")
        .unwrap()
        .query_map(["web"], |r| r.get::<_, String>(3))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(
        plan.iter().any(|p| p.contains("tasks_open_by_desk")),
        "{plan:?}"
    );
}
