//! Push notification queues against a real store on disk: a change is queued for every
//! webhook of its task in its own transaction, each webhook's queue is handed out in order
//! (the head only), failures come back later and are dropped after the bound, a reopened
//! store still has what was queued, and deleting a webhook or pruning the task takes its
//! queue with it.

use std::time::Duration;

use taskkeeper_core::limits::Limit;
use taskkeeper_core::push::{Attempted, NewPushConfig, PushAuth, PushItem};
use taskkeeper_core::store::NewDesk;
use taskkeeper_core::{AgentKind, Event, Store, StoreError, StoreOptions, TaskId, TaskState};

use crate::support::{T0, new_task};

fn open(path: &std::path::Path) -> Store {
    Store::open(path, StoreOptions::default()).unwrap()
}

fn webhook(id: Option<&str>, url: &str) -> NewPushConfig {
    NewPushConfig {
        id: id.map(str::to_owned),
        url: url.to_owned(),
        token: Some("tok".to_owned()),
        auth: Some(PushAuth {
            scheme: "Bearer".to_owned(),
            credentials: Some("secret".to_owned()),
        }),
        version: "1.0".to_owned(),
    }
}

/// (item, state) of every queued delivery of `config`, by handing out and delivering heads.
fn drain(store: &Store, config: &str) -> Vec<(PushItem, TaskState)> {
    let mut out = Vec::new();
    loop {
        let due = store
            .push_due(T0.plus(Duration::from_secs(3600)), 100)
            .unwrap();
        let Some(d) = due.into_iter().find(|d| d.config.id == config) else {
            return out;
        };
        out.push((d.item, d.task.state()));
        assert_eq!(
            store.push_attempted(d.seq, Ok(()), T0).unwrap(),
            Attempted::Delivered
        );
    }
}

#[test]
fn every_change_is_queued_in_order_per_webhook_and_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.db");
    let store = open(&path);
    store
        .add_desk(
            NewDesk {
                name: "web".parse().unwrap(),
                agent: AgentKind::Generic,
                dir: "/src/web".into(),
                deliver_command: None,
            },
            T0,
        )
        .unwrap();
    let task = store
        .submit_with_push(
            new_task("web", "a", "m1", "do it"),
            Some(webhook(Some("inline"), "http://127.0.0.1:9/hook")),
            T0,
        )
        .unwrap()
        .task;
    let second = store
        .put_push_config(&task.id, webhook(None, "http://127.0.0.1:9/other"), T0)
        .unwrap();
    assert!(!second.id.is_empty(), "an id is made up when none is given");
    let done = Event::WorkerDone {
        summary: "done".into(),
    };
    store.apply(&task.id, done, T0).unwrap();
    // Nothing but the first two heads is handed out while they are undelivered.
    let heads = store.push_due(T0, 100).unwrap();
    assert_eq!(heads.len(), 2, "{heads:?}");
    assert!(heads.iter().all(|d| d.item == PushItem::Task));
    drop(store);

    let store = open(&path);
    assert_eq!(
        drain(&store, "inline"),
        [
            (PushItem::Task, TaskState::Working),
            (PushItem::ArtifactUpdate, TaskState::Completed),
            (PushItem::StatusUpdate, TaskState::Completed),
        ]
    );
    assert_eq!(
        drain(&store, &second.id),
        [
            (PushItem::Task, TaskState::Working),
            (PushItem::ArtifactUpdate, TaskState::Completed),
            (PushItem::StatusUpdate, TaskState::Completed),
        ]
    );
    assert_eq!(store.push_queued().unwrap(), 0);
}

#[test]
fn a_failure_comes_back_later_is_dropped_after_the_bound_and_deleting_takes_the_queue() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("tasks.db"));
    store
        .add_desk(
            NewDesk {
                name: "web".parse().unwrap(),
                agent: AgentKind::Generic,
                dir: "/src/web".into(),
                deliver_command: None,
            },
            T0,
        )
        .unwrap();
    store.set_setting("push.retry_first", "10s").unwrap();
    store.set_setting("push.give_up_after", "1m").unwrap();
    let task = store
        .submit_with_push(
            new_task("web", "a", "m1", "x"),
            Some(webhook(Some("h"), "http://127.0.0.1:9/")),
            T0,
        )
        .unwrap()
        .task;
    let head = store.push_due(T0, 10).unwrap().remove(0);
    let later = T0.plus(Duration::from_secs(10));
    assert_eq!(
        store
            .push_attempted(head.seq, Err("503".into()), T0)
            .unwrap(),
        Attempted::Retry { at: later }
    );
    assert!(
        store.push_due(T0, 10).unwrap().is_empty(),
        "not before its time"
    );
    assert_eq!(store.push_next_due().unwrap(), Some(later));
    let again = store.push_due(later, 10).unwrap().remove(0);
    assert_eq!((again.seq, again.attempts), (head.seq, 1));
    let past = T0.plus(Duration::from_secs(60));
    assert!(matches!(
        store
            .push_attempted(again.seq, Err("503".into()), past)
            .unwrap(),
        Attempted::Dropped { attempts: 2, .. }
    ));
    assert_eq!(store.push_queued().unwrap(), 0);

    // A change queued for a webhook goes when the webhook is deleted.
    store
        .apply(&task.id, Event::WorkerBlocked { need: "?".into() }, T0)
        .unwrap();
    assert_eq!(store.push_queued().unwrap(), 1);
    assert!(store.delete_push_config(&task.id, "h").unwrap());
    assert!(!store.delete_push_config(&task.id, "h").unwrap());
    assert_eq!(store.push_queued().unwrap(), 0);
    assert!(store.push_configs(&task.id).unwrap().is_empty());

    // The bound on webhooks per task; setting an existing id again replaces it.
    store.set_setting("push.configs_per_task", "2").unwrap();
    for id in ["a", "b", "b"] {
        store
            .put_push_config(&task.id, webhook(Some(id), "http://127.0.0.1:9/"), T0)
            .unwrap();
    }
    let e = store
        .put_push_config(&task.id, webhook(Some("c"), "http://127.0.0.1:9/"), T0)
        .unwrap_err();
    assert!(
        matches!(&e, StoreError::Limit(l) if l.limit() == Limit::PushConfigsPerTask),
        "{e}"
    );
    assert!(e.to_string().contains("push.configs_per_task"), "{e}");
    assert_eq!(store.push_configs(&task.id).unwrap().len(), 2);
    let e = store
        .put_push_config(
            &TaskId::from("nope"),
            webhook(None, "http://127.0.0.1:9/"),
            T0,
        )
        .unwrap_err();
    assert!(matches!(e, StoreError::NoSuchTask(_)), "{e}");

    // Pruning the ended task takes its webhooks and their queue.
    store
        .apply(&task.id, Event::WorkerFailed { why: "no".into() }, T0)
        .unwrap();
    assert!(store.push_queued().unwrap() > 0);
    store
        .prune_ended(
            T0.plus(Duration::from_secs(86_400 * 30)),
            Duration::from_secs(1),
        )
        .unwrap();
    assert_eq!(store.push_queued().unwrap(), 0);
    assert!(store.push_configs(&task.id).unwrap().is_empty());
}

/// A change says whether it queued a push, so the daemon's push sender is woken by the
/// changes of tasks with a webhook and by nothing else (issue 13: it used to read its queue
/// after every change of any task).
#[test]
fn a_change_says_whether_it_queued_a_push() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("tasks.db"));
    store
        .add_desk(
            NewDesk {
                name: "web".parse().unwrap(),
                agent: AgentKind::Generic,
                dir: "/src/web".into(),
                deliver_command: None,
            },
            T0,
        )
        .unwrap();
    let plain = store
        .submit(new_task("web", "a", "m1", "no webhook"), T0)
        .unwrap();
    assert!(!plain.pushed, "a task without a webhook queues nothing");
    let hooked = store
        .submit_with_push(
            new_task("web", "a", "m2", "with one"),
            Some(webhook(None, "http://127.0.0.1:9/hook")),
            T0,
        )
        .unwrap();
    assert!(
        hooked.pushed,
        "the webhook's first push is queued with the task"
    );
    let resend = store
        .submit_with_push(
            new_task("web", "a", "m2", "with one"),
            Some(webhook(None, "http://127.0.0.1:9/hook")),
            T0,
        )
        .unwrap();
    assert!(
        !resend.pushed,
        "a resend changes nothing and queues nothing"
    );
    // The first task ends: its change queues nothing, but the next task starts, and that
    // one has a webhook.
    let done = Event::WorkerDone {
        summary: "done".into(),
    };
    let ended = store.apply(&plain.task.id, done, T0).unwrap();
    assert_eq!(ended.others.len(), 1, "the queued task started");
    assert!(ended.pushed, "the task that started with it has a webhook");
    let canceled = store
        .apply(&hooked.task.id, Event::Cancel { reason: None }, T0)
        .unwrap();
    assert!(canceled.pushed);
    let again = store
        .apply(&hooked.task.id, Event::Cancel { reason: None }, T0)
        .unwrap();
    assert!(!again.changed && !again.pushed, "a repeat queues nothing");
    let config = store.push_configs(&hooked.task.id).unwrap()[0].id.clone();
    let queued = drain(&store, &config);
    assert_eq!(
        queued.first().map(|q| q.0),
        Some(PushItem::Task),
        "{queued:?}"
    );
    assert!(
        queued.len() >= 2,
        "and what its start and its cancel pushed: {queued:?}"
    );
}
