//! What a call and a change cost in thread trips (issue 13: on two cores a third of a send's
//! CPU was the kernel switching threads): counted, never timed. A task write goes to the
//! store's writer and back with no blocking-pool thread waiting between, a task read with a
//! connection idle is done where the call is, and the loops that follow every change make a
//! trip only for the changes that concern them.

use std::sync::Arc;

use taskkeeper_core::store::{NewDesk, StoreOptions};
use taskkeeper_core::{AgentKind, Event, Message, NewTask, Store, SystemClock};
use taskkeeper_server::Tasks;
use taskkeeper_server::Trips;

use crate::support::{TestDaemon, until};

fn new_task(message_id: &str) -> NewTask {
    NewTask {
        desk: "web".parse().unwrap(),
        asker: "planner".to_owned(),
        request: Message::user_text(message_id, "Add a --json flag."),
        context_id: None,
        metadata: serde_json::Map::new(),
    }
}

#[test]
fn a_task_write_and_a_task_read_take_no_blocking_pool_thread() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("tasks.db"), StoreOptions::default()).unwrap();
    store
        .add_desk(
            NewDesk {
                name: "web".parse().unwrap(),
                agent: AgentKind::Generic,
                dir: "/tmp".into(),
                deliver_command: None,
            },
            taskkeeper_core::Timestamp::from_millis(0),
        )
        .unwrap();
    let files = taskkeeper_server::files::Files::new(dir.path(), 0);
    let tasks = Tasks::new(store, Arc::new(SystemClock), files);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let before = tasks.trips();
        let first = tasks.submit(new_task("m1")).await.unwrap().task;
        let second = tasks.submit(new_task("m2")).await.unwrap().task;
        let done = Event::WorkerDone {
            summary: "done".into(),
        };
        let changed = tasks.apply(&first.id, done).await.unwrap();
        assert_eq!(changed.others[0].id, second.id, "the next task started");
        assert_eq!(
            tasks.trips() - before,
            Trips {
                pool: 0,
                writer: 3,
                direct: 0
            },
            "each write went to the writer and back, and no pool thread waited for it"
        );
        // No read connection is open yet: the first read opens one on the pool.
        let before = tasks.trips();
        let pooled = tasks.get(&second.id).await.unwrap().unwrap();
        assert_eq!(
            tasks.trips() - before,
            Trips {
                pool: 1,
                ..Trips::default()
            }
        );
        let before = tasks.trips();
        for _ in 0..10 {
            let direct = tasks.get(&second.id).await.unwrap().unwrap();
            assert_eq!(direct.version, pooled.version);
        }
        assert_eq!(
            tasks.trips() - before,
            Trips {
                direct: 10,
                ..Trips::default()
            },
            "with a connection idle, a read is done where the call is"
        );
        assert!(
            tasks
                .get(&taskkeeper_core::TaskId::from("nope"))
                .await
                .unwrap()
                .is_none()
        );
    });
}

/// Sends at a desk whose task has no webhook: the push sender is not woken by them (it read
/// its queue after every change of any task), and with no desk set to launch by itself the
/// auto-launch loop does not look either (it made a trip to the store after every change).
#[test]
fn changes_that_do_not_concern_the_push_sender_or_the_auto_launch_loop_wake_neither() {
    let d = TestDaemon::start();
    d.with_desk("web");
    let daemon = d.daemon();
    // Settled: each loop has looked once since the start, and once more when told.
    until("the first looks", || {
        (daemon.push_looks() >= 1 && daemon.auto_launch_looks() >= 1).then_some(())
    });
    let (push0, auto0) = (daemon.push_looks(), daemon.auto_launch_looks());
    daemon.wake_push();
    daemon.wake_auto_launch();
    until("a look when told", || {
        (daemon.push_looks() > push0 && daemon.auto_launch_looks() > auto0).then_some(())
    });
    let (push0, auto0) = (daemon.push_looks(), daemon.auto_launch_looks());

    let ids: Vec<String> = (0..20)
        .map(|i| d.add_task("web", &format!("task {i}")))
        .collect();
    let ended = d.call(
        "POST",
        &format!("/api/tasks/{}/cancel", ids[0]),
        Some(&serde_json::json!({})),
    );
    assert_eq!(ended.0, 200, "{}", ended.1);

    // The loops are told once more; each looks exactly once for it, and never for the sends.
    daemon.wake_push();
    until("the push sender looked", || {
        (daemon.push_looks() > push0).then_some(())
    });
    assert_eq!(daemon.push_looks(), push0 + 1, "no look for the 21 changes");
    // The canceled task moved its desk's work, which resets the desk's launch guard and
    // makes one look; the 20 sends make none.
    daemon.wake_auto_launch();
    until("the auto-launch loop looked", || {
        (daemon.auto_launch_looks() > auto0).then_some(())
    });
    let looks = daemon.auto_launch_looks() - auto0;
    assert!(
        looks <= 2,
        "{looks} looks for 21 changes at a desk not set to launch"
    );
}

/// The watchdog's pass after a change reads the few desks it names in one trip (it made two:
/// the desks to read, then their sessions and tasks).
#[test]
fn a_watchdog_pass_after_a_change_reads_in_one_trip() {
    let d = TestDaemon::start();
    d.with_desk("web");
    let mut passes = d.daemon().watchdog_passes();
    let before = passes.borrow().number;
    d.add_task("web", "do it");
    let pass = until("a pass that read the desk", || {
        let p = *passes.borrow_and_update();
        (p.number > before && p.desks >= 1 && !p.full).then_some(p)
    });
    assert_eq!(pass.trips, 1, "{pass:?}");
}
