//! The store against a real SQLite file on disk.

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use taskkeeper_core::store::{NewDesk, StateFilter, Synchronous, TaskFilter, wal};
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
fn submit_each_makes_every_send_a_task_and_leaves_resends_to_submit() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    with_desk(&store, "web");
    let first = store
        .submit_each(
            new_task("web", "kit", "tck-input-required-1", "x"),
            None,
            T0,
        )
        .unwrap();
    store
        .apply(
            &first.task.id,
            Event::WorkerDone {
                summary: "ended by an earlier scenario".into(),
            },
            T0,
        )
        .unwrap();
    let second = store
        .submit_each(
            new_task("web", "kit", "tck-input-required-1", "x"),
            None,
            T0,
        )
        .unwrap();
    assert!(second.changed);
    assert_ne!(
        second.task.id, first.task.id,
        "a new task, not the ended one"
    );
    assert_eq!(second.task.state(), TaskState::Working);
    // The message keeps the id it was sent with.
    assert_eq!(second.task.history[0].message_id, "tck-input-required-1");
    // A plain submit of the same id is a new task too (the keys above are the tasks' own),
    // and its own resend finds it.
    let keyed = store
        .submit(new_task("web", "kit", "tck-input-required-1", "x"), T0)
        .unwrap();
    let again = store
        .submit(new_task("web", "kit", "tck-input-required-1", "x"), T0)
        .unwrap();
    assert!(keyed.changed && !again.changed);
    assert_eq!(keyed.task.id, again.task.id);
    assert_eq!(store.tasks(&TaskFilter::default()).unwrap().len(), 3);
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

/// Several settings change in one transaction: one invalid value refuses them all and leaves
/// every setting as it was, in memory and in the table (after a reopen); valid ones all land.
#[test]
fn settings_changed_together_land_together_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let change = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<Vec<_>>()
    };
    let err = store
        .set_settings(change(&[
            ("reminders.hourly_cap", "3"),
            ("reminders.ladder", "10s,20s"),
            ("reminders.hourly_cap", "lots"),
        ]))
        .unwrap_err();
    assert!(err.to_string().contains("reminders.hourly_cap"), "{err}");
    let unchanged = |store: &Store| {
        let s = store.settings().unwrap();
        assert_eq!(s.hourly_cap, 6);
        assert_ne!(s.get("reminders.ladder").unwrap(), "10s,20s");
    };
    unchanged(&store);
    store.close();
    drop(store);
    let store = open(&dir);
    unchanged(&store);
    let settings = store
        .set_settings(change(&[
            ("reminders.hourly_cap", "3"),
            ("reminders.ladder", "10s,20s"),
        ]))
        .unwrap();
    assert_eq!(settings.hourly_cap, 3);
    assert_eq!(
        store.settings().unwrap().get("reminders.ladder").unwrap(),
        "10s,20s"
    );
}

/// Every A2A call asks for the settings: they are read from the table once and then from
/// memory, and a change is seen by the next read, from this store or after a reopen.
#[test]
fn the_settings_are_read_once_until_one_changes() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    assert_eq!(store.settings().unwrap().hourly_cap, 6);
    let before = store.reads();
    assert_eq!(store.settings().unwrap().hourly_cap, 6);
    assert_eq!(store.reads() - before, Default::default(), "from memory");
    store.set_setting("reminders.hourly_cap", "3").unwrap();
    assert_eq!(store.settings().unwrap().hourly_cap, 3);
    assert!(store.set_setting("reminders.hourly_cap", "lots").is_err());
    assert_eq!(
        store.settings().unwrap().hourly_cap,
        3,
        "a refusal changes nothing"
    );
    let before = store.reads();
    assert_eq!(store.settings().unwrap().hourly_cap, 3);
    assert_eq!(store.reads() - before, Default::default());
    store.close();
    drop(store);
    assert_eq!(open(&dir).settings().unwrap().hourly_cap, 3);
}

/// Every A2A call names its desk: a desk is read once and then from memory, and each change
/// of a desk (its delivery command, auto-launch, removal) is seen by the next read.
#[test]
fn a_desk_is_read_once_until_a_desk_changes() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    assert!(store.desk("web").unwrap().is_none());
    with_desk(&store, "web");
    assert!(store.desk("web").unwrap().is_some(), "a desk added is seen");
    let before = store.reads();
    assert!(!store.desk("web").unwrap().unwrap().auto_launch);
    assert_eq!(store.reads() - before, Default::default(), "from memory");
    let web: taskkeeper_core::DeskName = "web".parse().unwrap();
    store.set_auto_launch(&web, true).unwrap();
    assert!(store.desk("web").unwrap().unwrap().auto_launch);
    store
        .set_deliver_command(&web, Some("notify-send".into()))
        .unwrap();
    assert_eq!(
        store
            .desk("web")
            .unwrap()
            .unwrap()
            .deliver_command
            .as_deref(),
        Some("notify-send")
    );
    store.remove_desk(&web).unwrap();
    assert!(
        store.desk("web").unwrap().is_none(),
        "a removed desk is gone"
    );
    assert!(store.cached_desk("web").is_none());
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

/// Many concurrent reads share the pool's connections: one that finds them all busy waits
/// for one instead of opening (and parsing the schema for) a connection it then drops. The
/// A2A server does a read per GetTask on as many threads as there are calls in flight.
#[test]
fn concurrent_reads_open_no_more_connections_than_the_pool_holds() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        Store::open(
            &dir.path().join("tasks.db"),
            StoreOptions {
                synchronous: Synchronous::Normal,
                readers: 2,
            },
        )
        .unwrap(),
    );
    with_desk(&store, "web");
    let id = store
        .submit(new_task("web", "a", "m1", "x"), T0)
        .unwrap()
        .task
        .id;
    let before = store.reads();
    let handles: Vec<_> = (0..16)
        .map(|_| {
            let (store, id) = (Arc::clone(&store), id.clone());
            thread::spawn(move || {
                for _ in 0..50 {
                    assert!(store.task(&id).unwrap().is_some());
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let read = store.reads() - before;
    assert!(read.connections_opened <= 2, "{read:?}");
    assert_eq!(read.tasks_decoded, 16 * 50);
    // A read waiting for a connection when the store closes is told so.
    store.close();
    assert!(matches!(store.task(&id), Err(StoreError::Closed)));
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

// ---- a damaged write-ahead log -------------------------------------------------------

/// The database, its log and its index as a crash leaves them: copied while the store that
/// wrote `tasks` committed tasks is still open (so nothing was checkpointed or removed).
fn crash_image(tasks: usize) -> (tempfile::TempDir, std::path::PathBuf) {
    let live = tempfile::tempdir().unwrap();
    let store = open(&live);
    with_desk(&store, "web");
    for i in 0..tasks {
        store
            .submit(new_task("web", "a", &format!("m{i}"), "a request"), T0)
            .unwrap();
    }
    let image = tempfile::tempdir().unwrap();
    for suffix in ["", "-wal", "-shm"] {
        let name = format!("tasks.db{suffix}");
        std::fs::copy(live.path().join(&name), image.path().join(&name)).unwrap();
    }
    drop(store);
    let db = image.path().join("tasks.db");
    (image, db)
}

fn files(db: &std::path::Path) -> Vec<Vec<u8>> {
    [db.to_owned(), wal::wal_path(db), wal::shm_path(db)]
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect()
}

/// Flip 8 bytes inside the page of frame `n` of the log.
fn damage_frame(db: &std::path::Path, n: usize) {
    let path = wal::wal_path(db);
    let mut bytes = std::fs::read(&path).unwrap();
    let at =
        wal::HEADER_LEN + (n - 1) * (wal::FRAME_HEADER_LEN + 4096) + wal::FRAME_HEADER_LEN + 512;
    for b in &mut bytes[at..at + 8] {
        *b ^= 0xff;
    }
    std::fs::write(&path, &bytes).unwrap();
}

fn count_tasks(db: &std::path::Path) -> usize {
    let store = Store::open(db, StoreOptions::default()).unwrap();
    store.tasks(&TaskFilter::default()).unwrap().len()
}

#[test]
fn a_crash_image_with_a_whole_log_opens_with_everything() {
    let (_image, db) = crash_image(30);
    assert!(wal::wal_path(&db).metadata().unwrap().len() > 0);
    assert_eq!(count_tasks(&db), 30);
}

#[test]
fn a_damaged_log_frame_with_commits_after_it_is_refused_and_left_untouched() {
    let (_image, db) = crash_image(30);
    damage_frame(&db, 3);
    let before = files(&db);
    let err = Store::open(&db, StoreOptions::default()).unwrap_err();
    assert!(matches!(err, StoreError::WalDamaged { .. }), "{err}");
    let text = err.to_string();
    for file in [db.clone(), wal::wal_path(&db), wal::shm_path(&db)] {
        assert!(text.contains(&file.display().to_string()), "{text}");
    }
    assert!(text.contains("frame 3 of"), "{text}");
    assert!(text.contains("taskkeeper doctor --recover"), "{text}");
    assert_eq!(files(&db), before, "the damaged files must not be touched");
}

#[test]
fn a_log_cut_short_of_its_commits_is_refused() {
    let (_image, db) = crash_image(30);
    let path = wal::wal_path(&db);
    let len = path.metadata().unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len - 5000)
        .unwrap();
    let err = Store::open(&db, StoreOptions::default()).unwrap_err();
    assert!(matches!(err, StoreError::WalDamaged { .. }), "{err}");
    assert!(err.to_string().contains("-shm index"), "{err}");
    // What was cut off cannot be named, and recovery says so rather than name nothing.
    let lost = taskkeeper_core::store::lost_tasks(&db).unwrap();
    assert!(
        lost.unnamed
            .as_deref()
            .is_some_and(|why| why.contains("gone from the log")),
        "{lost:?}"
    );
}

#[test]
fn an_unfinished_write_after_the_last_commit_opens_with_every_commit() {
    let (_image, db) = crash_image(30);
    // The process died while writing a frame of a transaction that never committed: its
    // header is there, its page half written.
    let path = wal::wal_path(&db);
    let mut bytes = std::fs::read(&path).unwrap();
    let mut frame = bytes[wal::HEADER_LEN..wal::HEADER_LEN + wal::FRAME_HEADER_LEN + 1500].to_vec();
    frame[4..8].copy_from_slice(&[0; 4]);
    bytes.extend_from_slice(&frame);
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(count_tasks(&db), 30);
}

#[test]
fn recovery_copies_the_damaged_files_aside_keeps_what_verifies_and_counts_what_it_dropped() {
    let (image, db) = crash_image(30);
    let whole = wal::check_files(&db).unwrap().unwrap();
    // Well after the schema and the desk, among the tasks.
    let frame = whole.frames as usize * 2 / 3;
    damage_frame(&db, frame);
    let before = files(&db);
    let aside = taskkeeper_core::store::aside_dir(image.path(), T0);
    assert!(
        aside
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("damaged-2026"),
        "{aside:?}"
    );

    let recovery = taskkeeper_core::store::recover(&db, &aside).unwrap();
    let (dir, copies) = recovery.aside.clone().unwrap();
    assert_eq!(dir, aside);
    let copied: Vec<Vec<u8>> = copies.iter().map(|c| std::fs::read(c).unwrap()).collect();
    assert_eq!(
        copied, before,
        "the copies are the damaged files, byte for byte"
    );
    assert_eq!(recovery.integrity, "ok");
    let found = recovery.found.clone().unwrap();
    assert_eq!(found.first_bad_frame, Some(frame as u64));
    assert!(recovery.dropped_transactions() > 0);
    // Every commit is counted: replayed, dropped, or the damaged frame itself.
    let counted = found.replayed_transactions + recovery.dropped_transactions();
    assert!(
        counted == whole.replayed_transactions || counted + 1 == whole.replayed_transactions,
        "{found:?}"
    );
    // SQLite kept exactly the replayed commits: the desk, then one task each.
    assert_eq!(
        count_tasks(&db) as u64,
        found.replayed_transactions - 1 - schema_commits(&whole),
    );
    assert_eq!(
        wal::check_files(&db).unwrap(),
        None,
        "the log is empty again"
    );
}

/// Commits in the log before the first desk: the schema's migrations.
fn schema_commits(whole: &wal::WalCheck) -> u64 {
    // 30 tasks and one desk; the rest created the schema.
    whole.replayed_transactions - 31
}

/// Every task in the database at `db` (opened by the store, so its log is replayed), by id,
/// with its version.
fn versions(db: &std::path::Path) -> std::collections::BTreeMap<String, u64> {
    let store = Store::open(db, StoreOptions::default()).unwrap();
    store
        .tasks(&TaskFilter::default())
        .unwrap()
        .into_iter()
        .map(|t| (t.id.to_string(), t.version))
        .collect()
}

/// A crash image whose log holds many tasks a transaction: one task, then `burst` submitted
/// at once (the writer commits what is queued in one transaction), then the first of them and
/// every third one finished. Returns the image, its database, and the last frame of the first
/// task's commit.
fn grouped_crash_image(burst: usize) -> (tempfile::TempDir, std::path::PathBuf, usize) {
    let live = tempfile::tempdir().unwrap();
    let store = open(&live);
    with_desk(&store, "web");
    // The asker's text goes through terminal_safe when it is shown: an escape and a second
    // line must not reach the owner's terminal.
    let first = store
        .submit(
            new_task(
                "web",
                "a",
                "m-first",
                "the first \u{1b}[31mred\nsecond line",
            ),
            T0,
        )
        .unwrap()
        .task;
    let live_db = live.path().join("tasks.db");
    let first_commit = wal::check_files(&live_db).unwrap().unwrap().replayed_frames as usize;
    let (tx, rx) = std::sync::mpsc::channel();
    for i in 0..burst {
        let tx = tx.clone();
        store.submit_then(
            new_task("web", "b", &format!("m{i}"), &format!("request {i}")),
            taskkeeper_core::store::Resend::SameTask,
            None,
            T0,
            move |r| tx.send(r.map(|c| c.task.id)).unwrap(),
        );
    }
    let ids: Vec<TaskId> = (0..burst).map(|_| rx.recv().unwrap().unwrap()).collect();
    for id in std::iter::once(&first.id).chain(ids.iter().step_by(3)) {
        store
            .apply(
                id,
                Event::WorkerDone {
                    summary: "done".into(),
                },
                T0,
            )
            .unwrap();
    }
    let image = tempfile::tempdir().unwrap();
    for suffix in ["", "-wal", "-shm"] {
        let name = format!("tasks.db{suffix}");
        std::fs::copy(live.path().join(&name), image.path().join(&name)).unwrap();
    }
    drop(store);
    let db = image.path().join("tasks.db");
    (image, db, first_commit)
}

/// Recovery names every acknowledged task whose committed writes the damage loses, not the
/// transactions: with many tasks a commit, the count of dropped transactions is far below
/// the tasks lost (issue 24: "43 committed transaction(s)", 115 tasks gone, none named). The
/// doctor names them before anything changes; recovery writes the list into the aside
/// folder, which only the owner can read.
#[test]
fn recovery_names_each_acknowledged_task_whose_writes_it_loses() {
    let (image, db, first_commit) = grouped_crash_image(60);
    let whole_copy = tempfile::tempdir().unwrap();
    for suffix in ["", "-wal", "-shm"] {
        let name = format!("tasks.db{suffix}");
        std::fs::copy(image.path().join(&name), whole_copy.path().join(&name)).unwrap();
    }
    let committed = versions(&whole_copy.path().join("tasks.db"));
    assert_eq!(committed.len(), 61);
    damage_frame(&db, first_commit);
    let found = wal::check_files(&db).unwrap().unwrap();
    assert!(found.is_damaged(), "{found:?}");

    let before = files(&db);
    let named = taskkeeper_core::store::lost_tasks(&db).unwrap();
    assert_eq!(files(&db), before, "naming them changed nothing");
    assert_eq!(named.unnamed, None);
    let aside = image.path().join("damaged");
    let recovery = taskkeeper_core::store::recover(&db, &aside).unwrap();
    assert_eq!(
        recovery.lost, named,
        "the doctor and the recovery name the same"
    );
    let kept = versions(&db);
    let lost: Vec<&String> = committed
        .iter()
        .filter(|(id, v)| kept.get(*id).is_none_or(|k| k < v))
        .map(|(id, _)| id)
        .collect();
    let listed: Vec<&String> = named.tasks.iter().map(|t| &t.id).collect();
    assert_eq!(listed, lost, "each lost task named, and no other");
    assert!(lost.len() > 50, "{}", lost.len());
    assert!(
        (lost.len() as u64) > recovery.dropped_transactions() + 1,
        "tasks lost, not transactions: {} tasks, {} transaction(s)",
        lost.len(),
        recovery.dropped_transactions()
    );

    // Each line names the task, its asker and its request's first line, made safe.
    let first = named
        .tasks
        .iter()
        .find(|t| t.asker == "a")
        .expect("the first task is lost too");
    assert_eq!(first.kept, None, "{first:?}");
    assert_eq!(first.committed.0, "completed");
    let line = first.line();
    assert!(
        line.contains(&first.id) && line.contains("asker a") && line.contains("the first [31mred"),
        "{line}"
    );
    assert!(
        !line.contains('\u{1b}') && !line.contains("second line"),
        "{line:?}"
    );

    let list = aside.join(taskkeeper_core::store::LOST_TASKS_FILE);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |p: &std::path::Path| p.metadata().unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&aside), 0o700, "the aside folder is the owner's only");
        assert_eq!(mode(&list), 0o600);
    }
    let text = std::fs::read_to_string(&list).unwrap();
    assert!(
        text.starts_with(&format!("{} acknowledged task(s)", lost.len())),
        "{text}"
    );
    for t in &named.tasks {
        assert!(text.contains(&t.line()), "{text}");
    }
}

#[test]
fn recovery_leaves_a_sound_log_alone() {
    let (image, db) = crash_image(5);
    let before = files(&db);
    let aside = image.path().join("aside");
    let recovery = taskkeeper_core::store::recover(&db, &aside).unwrap();
    assert_eq!(recovery.aside, None);
    assert!(!aside.exists());
    assert_eq!(files(&db), before);
}

#[test]
fn recovery_is_refused_while_a_store_holds_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let _store = open(&dir);
    let err = taskkeeper_core::store::recover(&dir.path().join("tasks.db"), &dir.path().join("x"))
        .unwrap_err();
    assert!(matches!(err, StoreError::Locked { .. }), "{err}");
}

/// A desk's launching by itself is off until set, refused for a desk that does not exist,
/// and kept across a reopen, like the daemon's marks (the last digest taken).
#[test]
fn auto_launch_and_the_marks_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    with_desk(&store, "web");
    assert!(!store.desk("web").unwrap().unwrap().auto_launch);
    assert!(
        store
            .set_auto_launch(&"web".parse().unwrap(), true)
            .unwrap()
            .auto_launch
    );
    assert!(matches!(
        store.set_auto_launch(&"nope".parse().unwrap(), true),
        Err(StoreError::NoSuchDesk(_))
    ));
    assert_eq!(store.mark(taskkeeper_core::digest::TAKEN).unwrap(), None);
    store.set_mark(taskkeeper_core::digest::TAKEN, T0).unwrap();
    let later = T0.plus(Duration::from_secs(60));
    store
        .set_mark(taskkeeper_core::digest::TAKEN, later)
        .unwrap();
    store.close();
    drop(store);

    let store = open(&dir);
    assert!(store.desk("web").unwrap().unwrap().auto_launch);
    assert_eq!(
        store.mark(taskkeeper_core::digest::TAKEN).unwrap(),
        Some(later)
    );
    assert_eq!(store.mark(taskkeeper_core::digest::OFFERED).unwrap(), None);
}

// ---- queue work independent of its depth (issue 13) ----------------------------------

/// A desk `web` with one working task and `queued` tasks behind it.
fn desk_with_queue(queued: usize) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    with_desk(&store, "web");
    for i in 0..=queued {
        store
            .submit(new_task("web", "a", &format!("m{i}"), "do it"), T0)
            .unwrap();
    }
    (dir, store)
}

/// What a submit, a change that lets the queue move on, a GetTask of a queued task and a
/// page of a desk's tasks read, on a desk with `queued` tasks waiting.
fn queue_costs(queued: usize) -> Vec<(&'static str, taskkeeper_core::store::Reads)> {
    let (_dir, store) = desk_with_queue(queued);
    let mut costs = Vec::new();
    let before = store.reads();
    let sent = store
        .submit(new_task("web", "a", "new", "one more"), T0)
        .unwrap()
        .task;
    costs.push(("submit", store.reads() - before));
    assert_eq!(sent.queue_position, u32::try_from(queued + 1).ok());

    let working = store
        .tasks(&TaskFilter {
            state: StateFilter::Open,
            desk: Some("web".parse().unwrap()),
            limit: Some(1),
            ..Default::default()
        })
        .unwrap()
        .remove(0);
    assert_eq!(working.state(), TaskState::Working);
    let before = store.reads();
    let done = store
        .apply(
            &working.id,
            Event::WorkerDone {
                summary: "done".into(),
            },
            T0,
        )
        .unwrap();
    costs.push(("complete", store.reads() - before));
    assert_eq!(done.others.len(), 1, "the next queued task started");
    assert_eq!(done.others[0].state(), TaskState::Working);

    let before = store.reads();
    let got = store.task(&sent.id).unwrap().unwrap();
    costs.push(("get", store.reads() - before));
    assert_eq!(
        got.queue_position,
        u32::try_from(queued).ok(),
        "one moved up"
    );

    let before = store.reads();
    let (page, _) = store
        .task_page(&taskkeeper_core::store::PageQuery {
            asker: None,
            desk: Some("web".parse().unwrap()),
            context_id: None,
            state: None,
            status_after: None,
            after: None,
            limit: 5,
        })
        .unwrap();
    costs.push(("page of 5", store.reads() - before));
    assert_eq!(page.len(), 5);

    // What the watchdog and a session's claim read of a desk: its working and blocked
    // tasks, and of its queue only what expires by now and the earliest task.
    let before = store.reads();
    let desk: taskkeeper_core::DeskName = "web".parse().unwrap();
    let held = store
        .tasks(&TaskFilter {
            state: StateFilter::Unqueued,
            desk: Some(desk.clone()),
            ..Default::default()
        })
        .unwrap();
    let expiring = store
        .expiring_tasks(&desk, T0.minus(Duration::from_secs(1)))
        .unwrap();
    costs.push(("a desk for the watchdog", store.reads() - before));
    assert_eq!(held.len(), 1, "the started one");
    assert_eq!(held[0].state(), TaskState::Working);
    assert_eq!(expiring.len(), 1, "nothing expires; the earliest open task");
    let everything = store.expiring_tasks(&desk, T0).unwrap();
    assert_eq!(everything.len(), queued + 1, "all were created at T0");
    costs
}

#[test]
fn submit_apply_get_and_list_read_the_same_at_any_queue_depth() {
    let shallow = queue_costs(3);
    let deep = queue_costs(90);
    let counted = |costs: &[(&'static str, taskkeeper_core::store::Reads)]| {
        costs
            .iter()
            .map(|(call, r)| (*call, r.statements, r.tasks_decoded))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        counted(&shallow),
        counted(&deep),
        "the statements and decoded tasks of each call must not grow with the queue"
    );
    // A submit, a change and the watchdog's read of a desk do not walk the queue either: the
    // same SQLite steps at any depth (the asker's open tasks and the new task's place come
    // from kept counts, the expiring tasks from a bounded range). A GetTask or a page of a
    // queued task counts the queue ahead of it on an index (steps, no decode).
    for ((call, s), (_, d)) in shallow.iter().zip(&deep) {
        if ["submit", "complete", "a desk for the watchdog"].contains(call) {
            assert_eq!(
                s.vm_steps, d.vm_steps,
                "{call}: {s:?} at depth 3, {d:?} at 90"
            );
        }
    }
    // What each call may read at most, at any depth: statements run and tasks decoded. A
    // submit and a change decode the task itself and at most the desk's holder and its first
    // queued task; a page decodes its own tasks.
    let most = [
        ("submit", 8, 1),
        ("complete", 7, 2),
        ("get", 2, 1),
        ("page of 5", 3, 5),
        ("a desk for the watchdog", 3, 2),
    ];
    for ((call, reads), (name, statements, decoded)) in shallow.iter().zip(most) {
        assert_eq!(*call, name);
        assert!(
            reads.statements <= statements && reads.tasks_decoded <= decoded,
            "{call} read {reads:?}, at most {statements} statements and {decoded} tasks"
        );
    }
}

#[test]
fn positions_come_from_the_queue_order_with_several_tasks_of_a_desk_in_one_list() {
    let (_dir, store) = desk_with_queue(4);
    let open = store
        .tasks(&TaskFilter {
            state: StateFilter::Open,
            ..Default::default()
        })
        .unwrap();
    let positions: Vec<Option<u32>> = open.iter().map(|t| t.queue_position).collect();
    assert_eq!(positions, [None, Some(1), Some(2), Some(3), Some(4)]);
    // A blocked task frees the desk; a stalled one too: each time the next starts.
    let working = open[0].id.clone();
    let changed = store.apply(&working, Event::Stall, T0).unwrap();
    assert_eq!(changed.others.len(), 1, "a stalled task frees its desk");
    assert_eq!(changed.others[0].id, open[1].id);
    let third = store.task(&open[2].id).unwrap().unwrap();
    assert_eq!(third.queue_position, Some(1));
}

#[test]
fn a_database_from_before_the_holder_column_keeps_its_working_task_holding_the_desk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.db");
    let (working, queued) = {
        let store = open(&dir);
        with_desk(&store, "web");
        let w = store
            .submit(new_task("web", "a", "m1", "x"), T0)
            .unwrap()
            .task;
        let q = store
            .submit(new_task("web", "a", "m2", "y"), T0)
            .unwrap()
            .task;
        store.close();
        (w, q)
    };
    // As version 4 left it: no holder column, the migration fills it from the bodies.
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(
            "DROP INDEX tasks_holding_desk; DROP INDEX tasks_queued_by_desk; DROP INDEX sessions_by_desk; DROP INDEX tasks_ended_by_desk; DROP INDEX tasks_unqueued_by_desk; DROP INDEX tasks_open_by_desk_created; DROP INDEX tasks_open_by_asker; \
             DROP TRIGGER task_counts_insert; DROP TRIGGER task_counts_delete; DROP TRIGGER task_counts_update_open; DROP TRIGGER task_counts_update_queued; DROP TABLE task_counts; DROP INDEX desks_auto_launch; \
             ALTER TABLE tasks DROP COLUMN holds_desk; PRAGMA user_version = 4;",
        )
        .unwrap();
    }
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    let third = store.submit(new_task("web", "a", "m3", "z"), T0).unwrap();
    assert!(
        third.others.is_empty(),
        "the working task still holds the desk"
    );
    assert_eq!(third.task.queue_position, Some(2));
    let done = store
        .apply(
            &working.id,
            Event::WorkerDone {
                summary: "done".into(),
            },
            T0,
        )
        .unwrap();
    assert_eq!(done.others[0].id, queued.id);
}

/// What the auto-launch loop asks of a desk on every change of any task, and the owner's desk
/// list of every desk: whether it has work, the same answer as `autolaunch::has_work` over the
/// desk's open tasks, read without decoding a task and with the same steps at any queue depth.
#[test]
fn whether_a_desk_has_work_is_read_without_its_tasks_and_agrees_with_the_rule() {
    let desk: taskkeeper_core::DeskName = "web".parse().unwrap();
    let agrees = |store: &Store, when: &str| {
        let open = store
            .tasks(&TaskFilter {
                state: StateFilter::Open,
                desk: Some(desk.clone()),
                ..Default::default()
            })
            .unwrap();
        let before = store.reads();
        let has = store.desk_has_work(&desk).unwrap();
        let read = store.reads() - before;
        assert_eq!(has, taskkeeper_core::autolaunch::has_work(&open), "{when}");
        assert_eq!(read.tasks_decoded, 0, "{when}");
        // The owner's desk list reads every desk's load the same way.
        let before = store.reads();
        let load = store
            .desk_loads()
            .unwrap()
            .get(&desk)
            .copied()
            .unwrap_or_default();
        assert_eq!((store.reads() - before).tasks_decoded, 0, "{when}");
        assert_eq!(load.has_work, has, "{when}");
        assert_eq!(load.open_tasks, open.len(), "{when}");
        read
    };
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    with_desk(&store, "web");
    agrees(&store, "no task");
    let first = store
        .submit(new_task("web", "a", "m1", "x"), T0)
        .unwrap()
        .task;
    agrees(&store, "one working");
    store.apply(&first.id, Event::Stall, T0).unwrap();
    agrees(&store, "stalled");
    let second = store
        .submit(new_task("web", "a", "m2", "y"), T0)
        .unwrap()
        .task;
    store
        .apply(
            &second.id,
            Event::WorkerBlocked {
                need: "which port?".into(),
            },
            T0,
        )
        .unwrap();
    agrees(&store, "stalled and blocked");

    let (_d3, shallow) = desk_with_queue(3);
    let (_d90, deep) = desk_with_queue(90);
    assert_eq!(agrees(&shallow, "depth 3"), agrees(&deep, "depth 90"));
}

/// The desks set to launch by themselves come from their index: the same steps however many
/// other desks there are (the auto-launch loop asks on every change of any task).
#[test]
fn the_auto_launch_desks_are_read_without_the_other_desks() {
    let with_desks = |others: usize| {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir);
        for i in 0..others {
            with_desk(&store, &format!("d{i:03}"));
        }
        with_desk(&store, "web");
        store
            .set_auto_launch(&"web".parse().unwrap(), true)
            .unwrap();
        let before = store.reads();
        let desks = store.auto_launch_desks().unwrap();
        let read = store.reads() - before;
        let names: Vec<String> = desks.iter().map(|d| d.name.to_string()).collect();
        assert_eq!(names, ["web"]);
        (dir, read)
    };
    let (_a, few) = with_desks(3);
    let (_b, many) = with_desks(60);
    assert_eq!(few, many);
}

/// The desks set to launch by themselves are read once and kept in memory until a desk is
/// written, so the auto-launch loop can tell without the store whether a change concerns it.
#[test]
fn the_desks_set_to_launch_are_read_once_until_a_desk_changes() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    with_desk(&store, "web");
    assert!(store.cached_auto_launch_desks().is_none(), "not read yet");
    assert!(store.auto_launch_desks().unwrap().is_empty());
    assert_eq!(store.cached_auto_launch_desks(), Some(Vec::new()));
    let before = store.reads();
    assert!(store.auto_launch_desks().unwrap().is_empty());
    assert_eq!(store.reads() - before, Default::default(), "from memory");
    let web: taskkeeper_core::DeskName = "web".parse().unwrap();
    store.set_auto_launch(&web, true).unwrap();
    assert!(
        store.cached_auto_launch_desks().is_none(),
        "a write of a desk forgets them"
    );
    let set = store.auto_launch_desks().unwrap();
    assert_eq!(set.len(), 1);
    assert_eq!(store.cached_auto_launch_desks().unwrap()[0].name, web);
    with_desk(&store, "api");
    assert!(store.cached_auto_launch_desks().is_none());
}

/// A read that must not wait (the A2A server reads a task on the async worker the call runs
/// on) takes an idle read connection or none: it never opens one, never waits for one, and
/// reads the same task a pooled read does.
#[test]
fn a_task_read_without_waiting_takes_only_an_idle_connection() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    with_desk(&store, "web");
    let id = store
        .submit(new_task("web", "a", "m1", "x"), T0)
        .unwrap()
        .task
        .id;
    let queued = store
        .submit(new_task("web", "a", "m2", "y"), T0)
        .unwrap()
        .task
        .id;
    let before = store.reads();
    assert!(store.try_task(&id).is_none(), "no connection is open yet");
    assert_eq!(
        store.reads() - before,
        Default::default(),
        "and none was opened"
    );
    let pooled = store.task(&queued).unwrap().unwrap();
    let before = store.reads();
    let direct = store.try_task(&queued).unwrap().unwrap().unwrap();
    assert_eq!(direct.queue_position, Some(1));
    assert_eq!(direct.version, pooled.version);
    assert_eq!(direct.queue_position, pooled.queue_position);
    let read = store.reads() - before;
    assert_eq!(
        (read.connections_opened, read.tasks_decoded),
        (0, 1),
        "{read:?}"
    );
    assert!(matches!(
        store.try_task(&TaskId::from("nope")),
        Some(Ok(None))
    ));
    store.close();
    assert!(matches!(store.try_task(&id), Some(Err(StoreError::Closed))));
}
