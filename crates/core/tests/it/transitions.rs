//! The state machine: every (state, event) pair in one table, and properties over random
//! event sequences.

use std::fmt::Write as _;
use std::time::Duration;

use proptest::prelude::*;
use taskkeeper_core::transition::{Event, apply};
use taskkeeper_core::{Message, Task, TaskState, TransitionError};

use crate::support::{T0, submitted};

/// The starting points: every state, plus the marks that change what is allowed.
fn starting_points() -> Vec<(&'static str, Task)> {
    let now = T0.plus(Duration::from_secs(60));
    let base = submitted("t-1", 1);
    let with_state = |state: TaskState| {
        let mut t = base.clone();
        t.status.state = state;
        t
    };
    let mut stalled = with_state(TaskState::Working);
    stalled.stalled_at = Some(now);
    let mut handed = with_state(TaskState::Working);
    handed.delivered_at = Some(now);
    handed.delivered_to = Some(taskkeeper_core::SessionId::from("s-1"));
    handed.reminders_sent = 1;
    let mut acked = with_state(TaskState::Completed);
    acked.acknowledged_at = Some(now);
    vec![
        ("submitted", base.clone()),
        ("working", with_state(TaskState::Working)),
        ("working+stalled", stalled),
        ("working+handed", handed),
        ("input-required", with_state(TaskState::InputRequired)),
        ("auth-required", with_state(TaskState::AuthRequired)),
        ("completed", with_state(TaskState::Completed)),
        ("completed+acked", acked),
        ("failed", with_state(TaskState::Failed)),
        ("canceled", with_state(TaskState::Canceled)),
        ("rejected", with_state(TaskState::Rejected)),
    ]
}

fn events() -> Vec<Event> {
    vec![
        Event::Start,
        Event::WorkerDone {
            summary: "done it".into(),
        },
        Event::WorkerBlocked {
            need: "which flag?".into(),
        },
        Event::WorkerFailed {
            why: "no disk".into(),
        },
        Event::WorkerRejected {
            reason: "not this desk's work".into(),
        },
        Event::FollowUp {
            message: Message::user_text("m-2", "the --json one"),
        },
        Event::Cancel {
            reason: Some("not needed".into()),
        },
        Event::Expire,
        Event::Remind,
        Event::Stall,
        Event::Resume,
        Event::Acknowledge,
        Event::Delivered { to: None },
        Event::CancelTold,
        Event::HandBack {
            from: taskkeeper_core::SessionId::from("s-1"),
        },
        Event::WorkerSaid {
            text: "Now writing the probe".into(),
        },
        Event::OwnerWait { waiting: true },
        Event::AddArtifacts {
            artifacts: vec![taskkeeper_core::Artifact {
                artifact_id: "file-1".into(),
                name: Some("report.md".into()),
                description: None,
                parts: vec![taskkeeper_core::Part::text("# Report")],
                metadata: None,
                extensions: Vec::new(),
            }],
        },
        Event::AppendArtifact {
            artifact: chunk("log", "line 1"),
            last_chunk: false,
        },
    ]
}

fn chunk(id: &str, text: &str) -> taskkeeper_core::Artifact {
    taskkeeper_core::Artifact {
        artifact_id: id.into(),
        name: Some(id.into()),
        description: None,
        parts: vec![taskkeeper_core::Part::text(text)],
        metadata: None,
        extensions: Vec::new(),
    }
}

/// One outcome in a few words: the new state and marks, `same` for an idempotent repeat, or
/// the refusal's kind.
fn outcome(before: &Task, result: &Result<Task, TransitionError>) -> String {
    match result {
        Ok(t) if t == before => "same".to_owned(),
        Ok(t) => {
            let mut s = t.state().as_str().to_owned();
            for (mark, on) in [
                ("stalled", t.stalled_at.is_some()),
                ("expired", t.expired_at.is_some()),
                ("acked", t.acknowledged_at.is_some()),
                ("delivered", t.delivered_at.is_some()),
                ("handed", t.delivered_to.is_some()),
                ("waiting", t.waiting_on_owner),
                ("said", t.last_words.is_some()),
                ("told", t.cancel_told_at.is_some()),
                (
                    "attached",
                    t.artifacts.iter().any(|a| a.artifact_id != "result"),
                ),
                ("chunking", !t.artifacts_in_progress.is_empty()),
            ] {
                if on {
                    s.push('+');
                    s.push_str(mark);
                }
            }
            if t.reminders_sent > before.reminders_sent {
                s.push_str("+reminded");
            }
            if t.reminders_sent < before.reminders_sent {
                s.push_str("+new-ladder");
            }
            s
        }
        Err(e) => format!(
            "!{}",
            format!("{e:?}").split([' ', '{']).next().unwrap_or("?")
        ),
    }
}

#[test]
fn every_state_and_event() {
    let now = T0.plus(Duration::from_secs(120));
    let mut table = String::new();
    for (name, task) in starting_points() {
        write!(table, "{name:16}|").unwrap();
        for event in events() {
            let result = apply(&task, event, now);
            write!(table, " {}", outcome(&task, &result)).unwrap();
        }
        table.push('\n');
    }
    // Columns: start done blocked failed rejected follow-up cancel expire remind stall resume ack
    //          delivered cancel-told hand-back worker-said owner-wait add-artifacts
    //          append-artifact
    let expected = [
        "submitted       | working completed input-required failed rejected submitted canceled canceled+expired !NotWorking !NotWorking !NotStalled !StillOpen !NothingToDeliver !NothingToDeliver same submitted+said submitted+waiting submitted+attached submitted+attached+chunking",
        "working         | !NotQueued completed input-required failed rejected working canceled canceled+expired working+reminded working+stalled !NotStalled !StillOpen working+delivered !NothingToDeliver same working+said working+waiting working+attached working+attached+chunking",
        "working+stalled | !NotQueued completed+stalled input-required failed+stalled rejected+stalled working canceled+stalled canceled+stalled+expired !NotWorking !NotWorking working !StillOpen working+stalled+delivered !NothingToDeliver same working+stalled+said working+stalled+waiting working+stalled+attached working+stalled+attached+chunking",
        "working+handed  | !NotQueued completed+delivered+handed input-required+delivered+handed failed+delivered+handed rejected+delivered+handed working+handed+new-ladder canceled+delivered+handed canceled+expired+delivered+handed working+delivered+handed+reminded working+stalled+delivered+handed !NotStalled !StillOpen !NothingToDeliver !NothingToDeliver working+new-ladder working+delivered+handed+said working+delivered+handed+waiting working+delivered+handed+attached working+delivered+handed+attached+chunking",
        "input-required  | !NotQueued completed input-required failed rejected working canceled canceled+expired !NotWorking !NotWorking !NotStalled !StillOpen !NothingToDeliver !NothingToDeliver same input-required+said input-required+waiting input-required+attached input-required+attached+chunking",
        "auth-required   | !NotQueued completed input-required failed rejected working canceled canceled+expired !NotWorking !NotWorking !NotStalled !StillOpen !NothingToDeliver !NothingToDeliver same auth-required+said auth-required+waiting auth-required+attached auth-required+attached+chunking",
        "completed       | !NotQueued !Ended !Ended !Ended !Ended !Ended !NotCancelable !Ended !NotWorking !NotWorking !NotStalled completed+acked !NothingToDeliver !NothingToDeliver same !Ended !Ended !Ended !Ended",
        "completed+acked | !NotQueued !Ended !Ended !Ended !Ended !Ended !NotCancelable !Ended !NotWorking !NotWorking !NotStalled same !NothingToDeliver !NothingToDeliver same !Ended !Ended !Ended !Ended",
        "failed          | !NotQueued !Ended !Ended !Ended !Ended !Ended !NotCancelable !Ended !NotWorking !NotWorking !NotStalled failed+acked !NothingToDeliver !NothingToDeliver same !Ended !Ended !Ended !Ended",
        "canceled        | !NotQueued !Ended !Ended !Ended !Ended !Ended same !Ended !NotWorking !NotWorking !NotStalled canceled+acked !NothingToDeliver !NothingToDeliver same !Ended !Ended !Ended !Ended",
        "rejected        | !NotQueued !Ended !Ended !Ended !Ended !Ended !NotCancelable !Ended !NotWorking !NotWorking !NotStalled rejected+acked !NothingToDeliver !NothingToDeliver same !Ended !Ended !Ended !Ended",
    ]
    .join("\n")
        + "\n";
    assert_eq!(
        table, expected,
        "\n--- got ---\n{table}--- expected ---\n{expected}"
    );
}

#[test]
fn worker_endings_carry_their_text() {
    let now = T0.plus(Duration::from_secs(5));
    let working = apply(&submitted("t-1", 1), Event::Start, now).unwrap();

    let done = apply(
        &working,
        Event::WorkerDone {
            summary: "Added --json".into(),
        },
        now,
    )
    .unwrap();
    assert_eq!(
        done.status.message.as_ref().map(Message::text).as_deref(),
        Some("Added --json")
    );
    assert_eq!(done.artifacts.len(), 1);
    assert_eq!(done.artifacts[0].artifact_id, "result");
    assert_eq!(done.history.last(), done.status.message.as_ref());

    let blocked = apply(
        &working,
        Event::WorkerBlocked {
            need: "Which format?".into(),
        },
        now,
    )
    .unwrap();
    assert_eq!(blocked.state(), TaskState::InputRequired);
    let answered = apply(
        &blocked,
        Event::FollowUp {
            message: Message::user_text("m-9", "NDJSON"),
        },
        now,
    )
    .unwrap();
    assert_eq!(answered.state(), TaskState::Working);
    assert_eq!(
        answered.history.last().map(Message::text).as_deref(),
        Some("NDJSON")
    );
    assert_eq!(
        answered
            .history
            .last()
            .and_then(|m| m.task_id.clone())
            .as_deref(),
        Some("t-1")
    );

    let rejected = apply(
        &working,
        Event::WorkerRejected {
            reason: "Not this desk's work: ask the web desk.".into(),
        },
        now,
    )
    .unwrap();
    assert_eq!(rejected.state(), TaskState::Rejected);
    assert_eq!(
        rejected
            .status
            .message
            .as_ref()
            .map(Message::text)
            .as_deref(),
        Some("Not this desk's work: ask the web desk.")
    );
    assert_eq!(rejected.history.last(), rejected.status.message.as_ref());
    assert!(rejected.artifacts.is_empty(), "a rejection has no result");

    let expired = apply(&working, Event::Expire, now).unwrap();
    assert_eq!(expired.state(), TaskState::Canceled);
    assert_eq!(expired.expired_at, Some(now));
}

#[test]
fn a_follow_up_starts_a_new_ladder() {
    let now = T0.plus(Duration::from_secs(5));
    let mut t = apply(&submitted("t-1", 1), Event::Start, now).unwrap();
    t = apply(&t, Event::Remind, now).unwrap();
    t = apply(&t, Event::Remind, now).unwrap();
    t = apply(&t, Event::Stall, now).unwrap();
    assert_eq!((t.reminders_sent, t.stalled_at.is_some()), (2, true));
    t = apply(
        &t,
        Event::FollowUp {
            message: Message::user_text("m-3", "any news?"),
        },
        now,
    )
    .unwrap();
    assert_eq!((t.reminders_sent, t.stalled_at), (0, None));
}

#[test]
fn refusals_name_the_task_and_the_way_forward() {
    let mut done = submitted("t-7", 1);
    done.status.state = TaskState::Completed;
    let err = apply(
        &done,
        Event::FollowUp {
            message: Message::user_text("m", "more"),
        },
        T0,
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("t-7") && text.contains("referenceTaskIds"),
        "{text}"
    );
    let err = apply(&submitted("t-8", 1), Event::Acknowledge, T0).unwrap_err();
    assert!(err.to_string().contains("still open"), "{err}");
}

fn arb_event() -> impl Strategy<Value = Event> {
    prop_oneof![
        Just(Event::Start),
        any::<u8>().prop_map(|n| Event::WorkerDone {
            summary: format!("summary {n}")
        }),
        any::<u8>().prop_map(|n| Event::WorkerBlocked {
            need: format!("need {n}")
        }),
        any::<u8>().prop_map(|n| Event::WorkerFailed {
            why: format!("why {n}")
        }),
        any::<u8>().prop_map(|n| Event::WorkerRejected {
            reason: format!("reason {n}")
        }),
        (any::<u8>(), any::<bool>()).prop_map(|(n, last_chunk)| Event::AppendArtifact {
            artifact: chunk("log", &format!("line {n}")),
            last_chunk
        }),
        any::<u8>().prop_map(|n| Event::FollowUp {
            message: Message::user_text(format!("m-{n}"), "more")
        }),
        proptest::option::of(Just("stop".to_owned())).prop_map(|reason| Event::Cancel { reason }),
        Just(Event::Expire),
        Just(Event::Remind),
        Just(Event::Stall),
        Just(Event::Resume),
        Just(Event::Acknowledge),
        Just(Event::Delivered { to: None }),
        Just(Event::Delivered {
            to: Some(taskkeeper_core::SessionId::from("s-1"))
        }),
        Just(Event::HandBack {
            from: taskkeeper_core::SessionId::from("s-1")
        }),
        Just(Event::CancelTold),
        any::<u8>().prop_map(|n| Event::WorkerSaid {
            text: format!("words {n}")
        }),
        any::<bool>().prop_map(|waiting| Event::OwnerWait { waiting }),
    ]
}

proptest! {
    /// Terminal states are final (only the acknowledgement and cancel-told marks may still be added), versions
    /// only grow, by one per change, and a refusal leaves the task as it was.
    #[test]
    fn terminal_is_final_and_versions_only_grow(
        events in proptest::collection::vec((arb_event(), 0u64..600), 0..40)
    ) {
        let mut task = submitted("t-p", 1);
        let mut now = T0;
        for (event, step) in events {
            now = now.plus(Duration::from_secs(step));
            let before = task.clone();
            match apply(&task, event, now) {
                Ok(next) => {
                    prop_assert!(next.version == before.version || next.version == before.version + 1);
                    prop_assert_eq!(next.version == before.version, next == before);
                    if before.state().is_terminal() {
                        prop_assert_eq!(next.state(), before.state());
                        let mut only_ack = next.clone();
                        only_ack.acknowledged_at = before.acknowledged_at;
                        only_ack.cancel_told_at = before.cancel_told_at;
                        only_ack.version = before.version;
                        only_ack.updated_at = before.updated_at;
                        prop_assert_eq!(&only_ack, &before);
                    }
                    prop_assert!(next.updated_at >= before.updated_at);
                    task = next;
                }
                Err(_) => prop_assert_eq!(&task, &before),
            }
        }
    }
}

/// Each reminder's time is kept (at most `REMINDER_TIMES_KEPT`), and the current ladder's are
/// the last `reminders_sent`: a follow-up starts a new ladder, the old times stay for the
/// digest.
#[test]
fn reminder_times_are_kept_per_ladder_and_bounded() {
    use taskkeeper_core::task::REMINDER_TIMES_KEPT;
    let at = |s: u64| crate::support::T0.plus(std::time::Duration::from_secs(s));
    let mut t = apply(&crate::support::submitted("a", 1), Event::Start, at(0)).unwrap();
    t = apply(&t, Event::Remind, at(1)).unwrap();
    t = apply(&t, Event::Remind, at(2)).unwrap();
    t = apply(
        &t,
        Event::FollowUp {
            message: taskkeeper_core::Message::user_text("m-2", "also this"),
        },
        at(3),
    )
    .unwrap();
    assert_eq!(t.ladder_reminders(), &[] as &[taskkeeper_core::Timestamp]);
    t = apply(&t, Event::Remind, at(4)).unwrap();
    assert_eq!(t.ladder_reminders(), [at(4)]);
    assert_eq!(t.reminder_times, [at(1), at(2), at(4)]);
    for i in 0..100 {
        t = apply(&t, Event::Remind, at(10 + i)).unwrap();
    }
    assert_eq!(t.reminder_times.len(), REMINDER_TIMES_KEPT);
    assert_eq!(t.reminder_times.last(), Some(&at(109)));
    assert_eq!(t.ladder_reminders().len(), REMINDER_TIMES_KEPT);
}

/// A chunked artifact: the first chunk starts it, later ones append their parts, the last
/// one ends it; streams and pushes see each chunk with its flags, and the task the whole.
#[test]
fn chunks_append_to_one_artifact_and_each_is_told_once() {
    use taskkeeper_core::push::{PushItem, items_for};
    use taskkeeper_core::task::artifact_changes;
    let now = T0.plus(Duration::from_secs(5));
    let working = apply(&submitted("t-1", 1), Event::Start, now).unwrap();
    let one = apply(
        &working,
        Event::AppendArtifact {
            artifact: chunk("log", "chunk-1 "),
            last_chunk: false,
        },
        now,
    )
    .unwrap();
    let two = apply(
        &one,
        Event::AppendArtifact {
            artifact: chunk("log", "chunk-2"),
            last_chunk: true,
        },
        now,
    )
    .unwrap();
    assert_eq!(two.artifacts.len(), 1);
    let texts: Vec<String> = two.artifacts[0]
        .parts
        .iter()
        .map(|p| format!("{:?}", p.content))
        .collect();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(
        texts[0].contains("chunk-1 ") && texts[1].contains("chunk-2"),
        "{texts:?}"
    );
    assert!(two.artifacts_in_progress.is_empty());

    let first = artifact_changes(&working, &one);
    assert_eq!(first.len(), 1);
    assert_eq!((first[0].append, first[0].last_chunk), (false, false));
    assert_eq!(first[0].artifact, chunk("log", "chunk-1 "));
    let second = artifact_changes(&one, &two);
    assert_eq!(second.len(), 1);
    assert_eq!((second[0].append, second[0].last_chunk), (true, true));
    assert_eq!(
        second[0].artifact,
        chunk("log", "chunk-2"),
        "only the new part"
    );
    // One who missed the first chunk gets the artifact whole.
    let whole = artifact_changes(&working, &two);
    assert_eq!((whole[0].append, whole[0].last_chunk), (false, true));
    assert_eq!(whole[0].artifact, two.artifacts[0]);

    let items = items_for(Some(&one), &two);
    assert_eq!(items[0].0, PushItem::ArtifactAppend);
    assert_eq!(items[0].1.artifacts, [chunk("log", "chunk-2")]);
    assert_eq!(items[1].0, PushItem::StatusUpdate);

    // A chunk after the last starts the artifact anew; a whole artifact ends the chunks.
    let again = apply(
        &two,
        Event::AppendArtifact {
            artifact: chunk("log", "fresh"),
            last_chunk: false,
        },
        now,
    )
    .unwrap();
    assert_eq!(again.artifacts, [chunk("log", "fresh")]);
    let replaced = apply(
        &again,
        Event::AddArtifacts {
            artifacts: vec![chunk("log", "all of it")],
        },
        now,
    )
    .unwrap();
    assert!(replaced.artifacts_in_progress.is_empty());
    // An ended task takes no chunk, and stays as it was.
    let done = apply(
        &two,
        Event::WorkerDone {
            summary: "ok".into(),
        },
        now,
    )
    .unwrap();
    let refused = apply(
        &done,
        Event::AppendArtifact {
            artifact: chunk("log", "late"),
            last_chunk: true,
        },
        now,
    );
    assert!(
        matches!(refused, Err(TransitionError::Ended { .. })),
        "{refused:?}"
    );
}
