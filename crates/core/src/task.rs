//! The task: an A2A v1 Task plus what Taskkeeper keeps about it.
//!
//! The A2A parts ([`TaskState`], [`Role`], [`Message`], [`Part`], [`Artifact`]) serialise as
//! A2A v1.0 JSON (ProtoJSON enum names, camelCase fields, parts told apart by member name), so
//! the store can keep them as they arrived and the A2A adapter can pass them through. The wire
//! shapes of each boundary (A2A v1.0 and v0.3, the owner API) are built from this model by the
//! server; nothing here is a wire contract by itself.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::clock::Timestamp;
use crate::desk::DeskName;

/// A task id (a UUID chosen by the server; askers cannot choose ids for new tasks).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TaskId(String);

impl TaskId {
    pub fn generate() -> Self {
        Self(uuid::Uuid::new_v4().to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for TaskId {
    fn from(s: &str) -> Self {
        Self(s.to_owned())
    }
}

impl From<String> for TaskId {
    fn from(s: String) -> Self {
        Self(s)
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The A2A task states. A worker's `task_update rejected` produces `Rejected`; Taskkeeper
/// never produces `AuthRequired` for a real desk, but a task read back from elsewhere may
/// carry it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TaskState {
    #[serde(rename = "TASK_STATE_SUBMITTED")]
    Submitted,
    #[serde(rename = "TASK_STATE_WORKING")]
    Working,
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED")]
    InputRequired,
    #[serde(rename = "TASK_STATE_AUTH_REQUIRED")]
    AuthRequired,
    #[serde(rename = "TASK_STATE_COMPLETED")]
    Completed,
    #[serde(rename = "TASK_STATE_FAILED")]
    Failed,
    #[serde(rename = "TASK_STATE_CANCELED")]
    Canceled,
    #[serde(rename = "TASK_STATE_REJECTED")]
    Rejected,
}

impl TaskState {
    pub const ALL: [TaskState; 8] = [
        TaskState::Submitted,
        TaskState::Working,
        TaskState::InputRequired,
        TaskState::AuthRequired,
        TaskState::Completed,
        TaskState::Failed,
        TaskState::Canceled,
        TaskState::Rejected,
    ];

    /// Terminal states are final: nothing changes a task in one but an acknowledgement.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Failed | Self::Canceled | Self::Rejected
        )
    }

    /// Interrupted states wait on the asker; a blocking SendMessage returns on them.
    pub fn is_interrupted(self) -> bool {
        matches!(self, Self::InputRequired | Self::AuthRequired)
    }

    /// The name used in the store and the owner API (`working`, `input-required`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Submitted => "submitted",
            Self::Working => "working",
            Self::InputRequired => "input-required",
            Self::AuthRequired => "auth-required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Canceled => "canceled",
            Self::Rejected => "rejected",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    #[serde(rename = "ROLE_USER")]
    User,
    #[serde(rename = "ROLE_AGENT")]
    Agent,
}

/// What a part carries; exactly one member is present on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PartContent {
    Text(String),
    /// Bytes, base64 in JSON.
    Raw(String),
    Url(String),
    Data(Value),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    #[serde(flatten)]
    pub content: PartContent,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
}

impl Part {
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: PartContent::Text(text.into()),
            metadata: None,
            filename: None,
            media_type: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub message_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    pub role: Role,
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference_task_ids: Vec<String>,
}

impl Message {
    /// A message from the asker's side with one text part.
    pub fn user_text(message_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self::with_role(Role::User, message_id, text)
    }

    /// A message from the worker's side with one text part.
    pub fn agent_text(message_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self::with_role(Role::Agent, message_id, text)
    }

    fn with_role(role: Role, message_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            message_id: message_id.into(),
            context_id: None,
            task_id: None,
            role,
            parts: vec![Part::text(text)],
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }

    /// The text parts joined by blank lines: what a session is shown.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .parts
            .iter()
            .filter_map(|p| match &p.content {
                PartContent::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n\n")
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    pub artifact_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    pub state: TaskState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    pub timestamp: Timestamp,
}

/// How many reminder times a task keeps: more than any ladder the settings allow in a day,
/// few enough that a task's body stays small.
pub const REMINDER_TIMES_KEPT: usize = 64;

/// A request from an asker to a desk, before it is a task.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTask {
    pub desk: DeskName,
    /// Who asked: an asker's name, or `owner`.
    pub asker: String,
    /// The request. Its `messageId` makes the submission idempotent per asker.
    pub request: Message,
    /// The asker's context, or `None` to start a new one.
    pub context_id: Option<String>,
    pub metadata: Map<String, Value>,
}

/// A task: the A2A fields plus Taskkeeper's bookkeeping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    // --- A2A v1 ---
    pub id: TaskId,
    pub context_id: String,
    pub status: TaskStatus,
    #[serde(default)]
    pub history: Vec<Message>,
    #[serde(default)]
    pub artifacts: Vec<Artifact>,
    /// The asker's own metadata, kept as given.
    #[serde(default)]
    pub metadata: Map<String, Value>,

    // --- Taskkeeper ---
    pub desk: DeskName,
    pub asker: String,
    /// The `messageId` of the request that created the task (idempotency key with `asker`).
    pub request_message_id: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// The order key of the desk's FIFO queue: lower starts first.
    pub queue_seq: i64,
    /// 1 for the next task to start, while the task is queued. Derived from `queue_seq`
    /// when the store reads the task (`store::counts`, the one place it is computed); never
    /// stored.
    #[serde(skip)]
    pub queue_position: Option<u32>,
    /// Reminders sent on the current ladder (a follow-up or a resume starts a new ladder).
    #[serde(default)]
    pub reminders_sent: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_reminder_at: Option<Timestamp>,
    /// When each reminder was sent, oldest first, across ladders (the last
    /// [`Task::reminders_sent`] are the current ladder's), at most [`REMINDER_TIMES_KEPT`]:
    /// the timeline and the digest read them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reminder_times: Vec<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalled_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expired_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acknowledged_at: Option<Timestamp>,
    /// The worker's last message, so a reminder can remind it where it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_words: Option<String>,
    /// When the desk's session was handed the task (and its latest message from the asker);
    /// `None` while a WORKING task still waits to be delivered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<Timestamp>,
    /// The session the task (or the asker's latest message) was last handed to, when a
    /// session took it (a desk's command has none). Kept when a follow-up waits to be
    /// delivered: the session still holds the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_to: Option<crate::session_id::SessionId>,
    /// When the session was told that a task it had was canceled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel_told_at: Option<Timestamp>,
    /// A permission prompt or question of the desk's session waits on the owner. The task
    /// stays WORKING: INPUT_REQUIRED is for the asker, never for the owner's prompts.
    #[serde(default)]
    pub waiting_on_owner: bool,
    /// The ids of artifacts still arriving in chunks ([`crate::Event::AppendArtifact`]
    /// without its last chunk yet): what a stream needs to say `lastChunk`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts_in_progress: Vec<String>,
    /// Grows by one with every change; the store writes only over the version it read.
    pub version: u64,
}

impl Task {
    /// The submit transition: a new task is SUBMITTED (queued) at version 1. Whether it
    /// starts at once is the queue's decision ([`crate::queue::next_to_start`]).
    pub fn submit(id: TaskId, new: NewTask, queue_seq: i64, now: Timestamp) -> Self {
        let context_id = new
            .context_id
            .or_else(|| new.request.context_id.clone())
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let mut request = new.request;
        request.task_id = Some(id.as_str().to_owned());
        request.context_id = Some(context_id.clone());
        Self {
            id,
            context_id,
            status: TaskStatus {
                state: TaskState::Submitted,
                message: None,
                timestamp: now,
            },
            request_message_id: request.message_id.clone(),
            history: vec![request],
            artifacts: Vec::new(),
            metadata: new.metadata,
            desk: new.desk,
            asker: new.asker,
            created_at: now,
            updated_at: now,
            queue_seq,
            queue_position: None,
            reminders_sent: 0,
            last_reminder_at: None,
            reminder_times: Vec::new(),
            stalled_at: None,
            expired_at: None,
            acknowledged_at: None,
            last_words: None,
            delivered_at: None,
            delivered_to: None,
            cancel_told_at: None,
            waiting_on_owner: false,
            artifacts_in_progress: Vec::new(),
            version: 1,
        }
    }

    pub fn state(&self) -> TaskState {
        self.status.state
    }

    pub fn is_open(&self) -> bool {
        !self.status.state.is_terminal()
    }

    /// The session was handed this task and must now be told it was canceled.
    pub fn cancel_to_tell(&self) -> bool {
        self.state() == TaskState::Canceled
            && self.delivered_at.is_some()
            && self.cancel_told_at.is_none()
    }

    /// The task is the desk's and its session has not been handed it (or the asker's latest
    /// message) yet.
    pub fn to_deliver(&self) -> bool {
        self.state() == TaskState::Working && self.delivered_at.is_none()
    }

    /// When the task ended (its final status), if it did.
    pub fn ended_at(&self) -> Option<Timestamp> {
        self.state().is_terminal().then_some(self.status.timestamp)
    }

    /// The reminders of the current ladder, oldest first.
    pub fn ladder_reminders(&self) -> &[Timestamp] {
        let n = (self.reminders_sent as usize).min(self.reminder_times.len());
        &self.reminder_times[self.reminder_times.len() - n..]
    }

    /// The asker's request: the first message of the history.
    pub fn request_text(&self) -> String {
        self.history.first().map(Message::text).unwrap_or_default()
    }

    /// What every surface shows the owner for this task's state (the owner API's task view
    /// carries it, so the window, the CLI and the digest say the same words): the A2A state,
    /// told apart where the owner needs more (queued with its place, stalled, waiting on the
    /// owner, blocked on the asker, expired).
    pub fn label(&self) -> Label {
        match self.state() {
            TaskState::Submitted => Label::Queued(self.queue_position),
            TaskState::Working if self.stalled_at.is_some() => Label::Stalled,
            TaskState::Working if self.waiting_on_owner => Label::WaitingOnOwner,
            TaskState::Working => Label::Working,
            TaskState::InputRequired => Label::Blocked,
            TaskState::AuthRequired => Label::AuthRequired,
            TaskState::Completed => Label::Completed,
            TaskState::Failed => Label::Failed,
            TaskState::Canceled if self.expired_at.is_some() => Label::Expired,
            TaskState::Canceled => Label::Canceled,
            TaskState::Rejected => Label::Rejected,
        }
    }
}

/// A task's state as the owner is shown it ([`Task::label`]); its [`fmt::Display`] is the
/// words, [`Label::kind`] a name for styling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Label {
    /// Waiting in its desk's queue, at this place (1: next) when it is known.
    Queued(Option<u32>),
    Working,
    /// Its ladder ran out: the session did not answer its reminders (a stall beats a wait on
    /// the owner: the owner resumes it either way).
    Stalled,
    /// A permission prompt or a question of its desk's session waits on the owner.
    WaitingOnOwner,
    /// The worker needs something from the asker (INPUT_REQUIRED).
    Blocked,
    /// Never produced for a real desk, but a task read back from elsewhere may carry it.
    AuthRequired,
    Completed,
    Failed,
    /// Canceled because it stayed open past `tasks.expire_after`.
    Expired,
    Canceled,
    Rejected,
}

impl Label {
    /// Which label it is, without its place in the queue (`waiting-on-owner`, ...).
    pub fn kind(self) -> &'static str {
        match self {
            Label::Queued(_) => "queued",
            Label::Working => "working",
            Label::Stalled => "stalled",
            Label::WaitingOnOwner => "waiting-on-owner",
            Label::Blocked => "blocked",
            Label::AuthRequired => "auth-required",
            Label::Completed => "completed",
            Label::Failed => "failed",
            Label::Expired => "expired",
            Label::Canceled => "canceled",
            Label::Rejected => "rejected",
        }
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Label::Queued(Some(p)) => write!(f, "queued #{p}"),
            Label::Queued(None) => f.write_str("queued"),
            Label::WaitingOnOwner => f.write_str("waiting on you"),
            Label::AuthRequired => f.write_str("auth required"),
            other => f.write_str(other.kind()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a2a_parts_serialise_as_v1_json() {
        let m = Message::user_text("m-42", "Add a --json flag");
        assert_eq!(
            serde_json::to_value(&m).unwrap_or_default(),
            json!({"messageId":"m-42","role":"ROLE_USER","parts":[{"text":"Add a --json flag"}]})
        );
        let data: Part =
            serde_json::from_value(json!({"data":{"k":1},"mediaType":"application/json"}))
                .unwrap_or_else(|_| Part::text("unparsed"));
        assert_eq!(data.content, PartContent::Data(json!({"k":1})));
        assert_eq!(data.media_type.as_deref(), Some("application/json"));
        assert_eq!(
            serde_json::to_value(TaskState::InputRequired).unwrap_or_default(),
            json!("TASK_STATE_INPUT_REQUIRED")
        );
    }

    /// The table of labels: one per state, and the marks that change what the owner is told.
    #[test]
    fn every_task_has_the_label_the_owner_is_shown() {
        let new = NewTask {
            desk: "web".parse().unwrap(),
            asker: "alice".into(),
            request: Message::user_text("m-1", "Add a --json flag"),
            context_id: None,
            metadata: Map::new(),
        };
        let base = Task::submit(TaskId::from("t-1"), new, 1, Timestamp::from_millis(1));
        let with = |state: TaskState, change: fn(&mut Task)| {
            let mut t = base.clone();
            t.status.state = state;
            change(&mut t);
            t
        };
        let table: [(Task, Label, &str, &str); 14] = [
            (
                with(TaskState::Submitted, |t| t.queue_position = Some(2)),
                Label::Queued(Some(2)),
                "queued",
                "queued #2",
            ),
            (
                with(TaskState::Submitted, |_| {}),
                Label::Queued(None),
                "queued",
                "queued",
            ),
            (
                with(TaskState::Working, |_| {}),
                Label::Working,
                "working",
                "working",
            ),
            (
                with(TaskState::Working, |t| {
                    t.stalled_at = Some(Timestamp::from_millis(2))
                }),
                Label::Stalled,
                "stalled",
                "stalled",
            ),
            (
                with(TaskState::Working, |t| t.waiting_on_owner = true),
                Label::WaitingOnOwner,
                "waiting-on-owner",
                "waiting on you",
            ),
            (
                with(TaskState::Working, |t| {
                    t.waiting_on_owner = true;
                    t.stalled_at = Some(Timestamp::from_millis(2));
                }),
                Label::Stalled,
                "stalled",
                "stalled",
            ),
            (
                with(TaskState::InputRequired, |_| {}),
                Label::Blocked,
                "blocked",
                "blocked",
            ),
            (
                with(TaskState::AuthRequired, |_| {}),
                Label::AuthRequired,
                "auth-required",
                "auth required",
            ),
            (
                with(TaskState::Completed, |_| {}),
                Label::Completed,
                "completed",
                "completed",
            ),
            // A task that stalled and then ended is shown as it ended.
            (
                with(TaskState::Completed, |t| {
                    t.stalled_at = Some(Timestamp::from_millis(2))
                }),
                Label::Completed,
                "completed",
                "completed",
            ),
            (
                with(TaskState::Failed, |_| {}),
                Label::Failed,
                "failed",
                "failed",
            ),
            (
                with(TaskState::Canceled, |t| {
                    t.expired_at = Some(Timestamp::from_millis(2))
                }),
                Label::Expired,
                "expired",
                "expired",
            ),
            (
                with(TaskState::Canceled, |_| {}),
                Label::Canceled,
                "canceled",
                "canceled",
            ),
            (
                with(TaskState::Rejected, |_| {}),
                Label::Rejected,
                "rejected",
                "rejected",
            ),
        ];
        for (task, label, kind, words) in table {
            assert_eq!(
                task.label(),
                label,
                "{:?} {:?}",
                task.state(),
                task.stalled_at
            );
            assert_eq!((label.kind(), label.to_string().as_str()), (kind, words));
        }
    }

    #[test]
    fn state_names_round_trip() {
        for s in TaskState::ALL {
            assert_eq!(TaskState::parse(s.as_str()), Some(s));
        }
        assert_eq!(TaskState::parse("done"), None);
    }
}

/// One change of a task's artifacts as a stream or a push tells it (A2A's
/// TaskArtifactUpdateEvent): a new or replaced artifact, whole (`append: false`), or the parts
/// a chunk added to it (`append: true`); `last_chunk` unless more chunks are to come.
#[derive(Debug, Clone, PartialEq)]
pub struct ArtifactChange {
    pub artifact: Artifact,
    pub append: bool,
    pub last_chunk: bool,
}

/// The artifact changes from `before` to `after`, in `after`'s order. The one rule for
/// streams and pushes: an artifact that was arriving in chunks and only gained parts is an
/// append of those parts; any other new or different artifact is sent whole. Whoever skipped
/// versions in between (a stream reads the newest task) still gets every part once.
pub fn artifact_changes(before: &Task, after: &Task) -> Vec<ArtifactChange> {
    let mut changes = Vec::new();
    for a in &after.artifacts {
        let last_chunk = !after.artifacts_in_progress.contains(&a.artifact_id);
        let old = before
            .artifacts
            .iter()
            .find(|o| o.artifact_id == a.artifact_id);
        match old {
            Some(o) if o == a => {}
            Some(o)
                if before.artifacts_in_progress.contains(&a.artifact_id)
                    && a.parts.starts_with(&o.parts)
                    && (&a.name, &a.description, &a.metadata, &a.extensions)
                        == (&o.name, &o.description, &o.metadata, &o.extensions) =>
            {
                let mut chunk = a.clone();
                chunk.parts.drain(..o.parts.len());
                changes.push(ArtifactChange {
                    artifact: chunk,
                    append: true,
                    last_chunk,
                });
            }
            _ => changes.push(ArtifactChange {
                artifact: a.clone(),
                append: false,
                last_chunk,
            }),
        }
    }
    changes
}
