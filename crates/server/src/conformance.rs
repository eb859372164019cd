//! `taskkeeper serve --conformance`: a desk named `tck` whose scripted worker answers the
//! official A2A conformance kit's scenarios (a2a.md §16), chosen by the prefix of each
//! message's `messageId`, so the kit can be run against this server. It is off by default
//! and never touches another desk; without the flag the desk is removed at start-up.
//!
//! The kit sends no credentials, so in this mode the desk's endpoint (`PATH`, a room of
//! its own, [`crate::http::routes::Access::Conformance`]) lets callers without a token in, as one
//! anonymous asker confined to this desk; every other desk and route still needs its token.
//! Because the kit reuses one `messageId` per scenario for a whole run, that asker's sends are
//! not matched against earlier ones: each is a task of its own (`Store::submit_each`), so a
//! `tck-input-required` send is INPUT_REQUIRED whatever an earlier test did to the last one.
//!
//! The worker acts through the same task service as a real session's `task_update`, so the
//! kit tests the real transitions, queue, store and streams: its file, file-URL and data
//! artifacts are attached as a worker's are (`Event::AddArtifacts`, then the ending). The
//! "answer with a Message" scenario is answered by the endpoint itself, before any task
//! exists ([`direct_answer`]); the reject scenario is declined as a worker declines a task
//! (`Event::WorkerRejected`, REJECTED), and the chunked-artifact scenario sends its artifact
//! in two chunks (`Event::AppendArtifact`), which streams show as an artifact update and an
//! append with `lastChunk`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use taskkeeper_core::store::NewDesk;
use taskkeeper_core::task::PartContent;
use taskkeeper_core::{AgentKind, Artifact, Event, Message, Part, Role, StoreError, Task, TaskId};
use tokio::sync::{broadcast, watch};

use crate::tasks::Tasks;

/// The artifact of the chunked-artifact scenario.
const CHUNKED_ARTIFACT: &str = "output-chunked";

/// The conformance desk's name.
pub const DESK: &str = "tck";
/// Its A2A endpoint, and the same with the trailing slash the kit adds.
pub const PATH: &str = "/a2a/tck";
pub const PATH_SLASH: &str = "/a2a/tck/";

/// The conformance desk's directory: how it is told apart from a user's desk of that name.
fn marker_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("conformance")
}

/// What the scripted worker does for a message id.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Script {
    /// Done after `pause` (so a stream shows WORKING first), with the summary and, attached
    /// before the ending, an artifact.
    Done(Duration, &'static str, Option<Attached>),
    /// Done after `pause`, with an artifact sent first in these chunks, one change each.
    Chunked(Duration, &'static str, &'static [&'static str]),
    Blocked(&'static str),
    /// Declined at once, with the reason, as a worker's `task_update rejected`.
    Rejected(&'static str),
    /// Unscripted: ask for input after a pause (releases blocking waiters, stays open).
    AskLater(Duration),
}

/// The artifacts of the kit's artifact scenarios (DM-ART-001).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attached {
    /// `output.txt`, `text/plain`, its bytes inline: the kit reads the part itself and holds
    /// no token to fetch a URL from the daemon with.
    File,
    /// `output.txt`, `text/plain`, at `https://example.com/output.txt`.
    FileUrl,
    /// `{"key":"value","count":42}`.
    Data,
}

impl Attached {
    fn artifact(self) -> Artifact {
        let (id, content, filename, media_type) = match self {
            Attached::File => (
                "output-file",
                // "Generated file content", base64.
                PartContent::Raw("R2VuZXJhdGVkIGZpbGUgY29udGVudA==".into()),
                Some("output.txt"),
                "text/plain",
            ),
            Attached::FileUrl => (
                "output-file-url",
                PartContent::Url("https://example.com/output.txt".into()),
                Some("output.txt"),
                "text/plain",
            ),
            Attached::Data => (
                "output-data",
                PartContent::Data(serde_json::json!({"key": "value", "count": 42})),
                None,
                "application/json",
            ),
        };
        Artifact {
            artifact_id: id.into(),
            name: Some(filename.unwrap_or("data").into()),
            description: None,
            parts: vec![Part {
                content,
                metadata: None,
                filename: filename.map(Into::into),
                media_type: Some(media_type.into()),
            }],
            metadata: None,
            extensions: Vec::new(),
        }
    }
}

fn script_for(message_id: &str, streaming_timeout: Duration) -> Script {
    let now = Duration::ZERO;
    let brief = Duration::from_millis(200);
    let text = "Generated text content";
    match message_id {
        m if m.starts_with("tck-complete-task") => Script::Done(now, "Hello from TCK", None),
        m if m.starts_with("tck-artifact-text") => Script::Done(now, text, None),
        m if m.starts_with("tck-artifact-file-url") => {
            Script::Done(now, text, Some(Attached::FileUrl))
        }
        m if m.starts_with("tck-artifact-file") => Script::Done(now, text, Some(Attached::File)),
        m if m.starts_with("tck-artifact-data") => Script::Done(now, text, Some(Attached::Data)),
        m if m.starts_with("tck-input-required") => {
            Script::Blocked("The TCK scenario needs more input.")
        }
        m if m.starts_with("tck-stream-002") => Script::Done(now, text, None),
        m if m.starts_with("tck-stream-artifact-file") => {
            Script::Done(brief, text, Some(Attached::File))
        }
        m if m.starts_with("tck-stream-artifact-chunked") => {
            Script::Chunked(brief, text, &["chunk-1 ", "chunk-2"])
        }
        m if m.starts_with("tck-stream-") => Script::Done(brief, text, None),
        m if m.starts_with("test-resubscribe-message-id") => {
            Script::Done(streaming_timeout * 2, text, None)
        }
        m if m.starts_with("tck-reject-task") => {
            Script::Rejected("The TCK scenario asks for this task to be rejected.")
        }
        _ => Script::AskLater(Duration::from_secs(3)),
    }
}

/// The kit's "answer with a Message" scenario (DM-MSG-001): a send whose `messageId` starts
/// with `tck-message-response` is answered by a Message, and no task is made.
pub(crate) fn direct_answer(request: &Message) -> Option<Message> {
    if !request.message_id.starts_with("tck-message-response") {
        return None;
    }
    let mut answer = Message::agent_text(
        format!("answer-{}", TaskId::generate()),
        "Direct message response",
    );
    answer.context_id = Some(
        request
            .context_id
            .clone()
            .unwrap_or_else(|| TaskId::generate().to_string()),
    );
    Some(answer)
}

/// Make sure the conformance desk exists (with the flag) or is gone (without it).
pub(crate) async fn prepare(
    tasks: &Tasks,
    data_dir: &Path,
    enabled: bool,
) -> Result<(), StoreError> {
    let marker = marker_dir(data_dir);
    let existing = tasks.desks().get(DESK).await?;
    match (enabled, existing) {
        // A new run: the last run's open tasks would only count against the anonymous
        // asker's open-task limit.
        (true, Some(desk)) if desk.dir == marker => {
            cancel_open(tasks, &desk.name, "A new conformance run started.").await?;
        }
        (true, None) => {
            let name = DESK
                .parse()
                .map_err(|_| StoreError::NoSuchDesk(DESK.into()))?;
            let desk = NewDesk {
                name,
                agent: AgentKind::Generic,
                dir: marker,
                deliver_command: None,
            };
            tasks.desks().add(desk).await?;
        }
        (false, Some(desk)) if desk.dir == marker => {
            cancel_open(tasks, &desk.name, "Conformance mode ended.").await?;
            tasks.desks().remove(&desk.name).await?;
        }
        _ => {}
    }
    Ok(())
}

/// Cancel the desk's open tasks through the task service, so whoever follows them hears.
async fn cancel_open(
    tasks: &Tasks,
    desk: &taskkeeper_core::DeskName,
    reason: &str,
) -> Result<(), StoreError> {
    let filter = taskkeeper_core::store::TaskFilter {
        state: taskkeeper_core::store::StateFilter::Open,
        desk: Some(desk.clone()),
        ..Default::default()
    };
    let open = tasks.list(filter).await?;
    for t in open {
        let event = Event::Cancel {
            reason: Some(reason.into()),
        };
        tasks.apply(&t.id, event).await?;
    }
    Ok(())
}

/// The latest message from the asker's side, which the worker answers, and its place in the
/// history (the kit reuses a messageId for a task's follow-ups, so the id alone does not say
/// whether it was answered).
fn latest_request(t: &Task) -> Option<(usize, &str)> {
    t.history
        .iter()
        .enumerate()
        .rev()
        .find(|(_, m)| m.role == Role::User)
        .map(|(at, m)| (at, m.message_id.as_str()))
}

/// Run the scripted worker until `stop`.
pub(crate) async fn run(tasks: Tasks, mut stop: watch::Receiver<bool>) {
    let streaming_timeout = std::env::var("TCK_STREAMING_TIMEOUT")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .map_or(Duration::from_secs(2), Duration::from_secs_f64);
    let mut feed = tasks.feed();
    let mut handled: HashSet<(TaskId, usize)> = HashSet::new();
    loop {
        let task = tokio::select! {
            r = feed.recv() => match r {
                Ok(t) => t,
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(missed = n, "conformance worker fell behind");
                    continue;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
            _ = stop.wait_for(|s| *s) => return,
        };
        if task.desk.as_str() != DESK || !task.is_open() || task.state().is_interrupted() {
            continue;
        }
        let Some((at, message_id)) = latest_request(&task).map(|(at, m)| (at, m.to_owned())) else {
            continue;
        };
        if !handled.insert((task.id.clone(), at)) {
            continue;
        }
        let script = script_for(&message_id, streaming_timeout);
        let (tasks, id) = (tasks.clone(), task.id.clone());
        tokio::spawn(async move {
            let event = match script {
                Script::Done(pause, text, attached) => {
                    if !pause.is_zero() {
                        tokio::time::sleep(pause).await;
                    }
                    if let Some(attached) = attached {
                        let artifacts = vec![attached.artifact()];
                        if let Err(e) = tasks.apply(&id, Event::AddArtifacts { artifacts }).await {
                            tracing::warn!(task = %id, error = %e, "conformance worker could not attach");
                        }
                    }
                    Event::WorkerDone {
                        summary: text.into(),
                    }
                }
                Script::Chunked(pause, text, chunks) => {
                    tokio::time::sleep(pause).await;
                    for (n, chunk) in chunks.iter().enumerate() {
                        let event = Event::AppendArtifact {
                            artifact: Artifact {
                                artifact_id: CHUNKED_ARTIFACT.into(),
                                name: Some(CHUNKED_ARTIFACT.into()),
                                description: None,
                                parts: vec![Part::text(*chunk)],
                                metadata: None,
                                extensions: Vec::new(),
                            },
                            last_chunk: n + 1 == chunks.len(),
                        };
                        if let Err(e) = tasks.apply(&id, event).await {
                            tracing::warn!(task = %id, error = %e, "conformance worker could not append");
                        }
                    }
                    Event::WorkerDone {
                        summary: text.into(),
                    }
                }
                Script::Blocked(text) => Event::WorkerBlocked { need: text.into() },
                Script::Rejected(reason) => Event::WorkerRejected {
                    reason: reason.into(),
                },
                Script::AskLater(pause) => {
                    tokio::time::sleep(pause).await;
                    Event::WorkerBlocked {
                        need: "Send another message to continue.".into(),
                    }
                }
            };
            match tasks.apply(&id, event).await {
                // The asker may have ended or continued it meanwhile; that is fine.
                Ok(_) | Err(StoreError::Transition(_)) => {}
                Err(e) => {
                    tracing::warn!(task = %id, error = %e, "conformance worker could not act")
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paths_are_the_desks() {
        assert_eq!(PATH, format!("/a2a/{DESK}"));
        assert_eq!(PATH_SLASH, format!("{PATH}/"));
    }

    #[test]
    fn scenarios_follow_the_message_id_prefix() {
        let t = Duration::from_secs(2);
        assert_eq!(
            script_for("tck-complete-task-1a2b3c4d", t),
            Script::Done(Duration::ZERO, "Hello from TCK", None)
        );
        for (id, attached) in [
            ("tck-artifact-file-1", Attached::File),
            ("tck-artifact-file-url-1", Attached::FileUrl),
            ("tck-artifact-data-1", Attached::Data),
            ("tck-stream-artifact-file-1", Attached::File),
        ] {
            assert!(
                matches!(script_for(id, t), Script::Done(_, _, Some(a)) if a == attached),
                "{id}"
            );
        }
        assert!(direct_answer(&Message::user_text("tck-message-response-1", "hi")).is_some());
        assert!(direct_answer(&Message::user_text("tck-complete-task-1", "hi")).is_none());
        assert!(matches!(
            script_for("tck-input-required-00", t),
            Script::Blocked(_)
        ));
        assert_eq!(
            script_for("test-resubscribe-message-id-9", t),
            Script::Done(Duration::from_secs(4), "Generated text content", None)
        );
        assert!(matches!(
            script_for("tck-stream-001-x", t),
            Script::Done(_, _, None)
        ));
        assert!(matches!(
            script_for("tck-stream-artifact-chunked-x", t),
            Script::Chunked(_, _, [_, _])
        ));
        assert!(matches!(
            script_for("tck-reject-task-x", t),
            Script::Rejected(_)
        ));
        assert!(matches!(
            script_for("anything-else", t),
            Script::AskLater(_)
        ));
    }
}
