//! The owner API's names for the core's states (a task's, a session's, a ladder's hold...):
//! enums rather than strings, so the wire types say which names can come (the UI's
//! generated types list them) and the core's enums can change without changing them.

use serde::{Deserialize, Serialize};

/// Why a task's ladder waits (`core::watchdog::Hold`, its `rate-limited` and `wakes-itself`
/// until in [`super::TimelineView::hold_until`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(rename = "Hold"))]
#[serde(rename_all = "kebab-case")]
pub enum HoldView {
    Ended,
    Stalled,
    Queued,
    WaitsOnAsker,
    WaitsOnOwner,
    NotDelivered,
    NoSession,
    Paused,
    Busy,
    StoppedByOwner,
    RateLimited,
    /// The session scheduled a wake-up for itself; the ladder waits until it is due.
    WakesItself,
}

/// What a step of the ladder does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "kebab-case")]
pub enum StepKind {
    Remind,
    Stall,
}

/// Who started a turn (`core::session::TurnOrigin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(rename = "TurnOrigin"))]
#[serde(rename_all = "kebab-case")]
pub enum TurnOriginView {
    Owner,
    Taskkeeper,
    Background,
}

/// Which label a task is shown with (`core::task::Label::kind`), for styling; the task view's
/// `label` carries the words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(rename = "LabelKind"))]
#[serde(rename_all = "kebab-case")]
pub enum LabelKindView {
    Queued,
    Working,
    Stalled,
    WaitingOnOwner,
    Blocked,
    AuthRequired,
    Completed,
    Failed,
    Expired,
    Canceled,
    Rejected,
}

impl From<taskkeeper_core::task::Label> for LabelKindView {
    fn from(l: taskkeeper_core::task::Label) -> Self {
        use taskkeeper_core::task::Label as L;
        match l {
            L::Queued(_) => Self::Queued,
            L::Working => Self::Working,
            L::Stalled => Self::Stalled,
            L::WaitingOnOwner => Self::WaitingOnOwner,
            L::Blocked => Self::Blocked,
            L::AuthRequired => Self::AuthRequired,
            L::Completed => Self::Completed,
            L::Failed => Self::Failed,
            L::Expired => Self::Expired,
            L::Canceled => Self::Canceled,
            L::Rejected => Self::Rejected,
        }
    }
}

/// A task's A2A state, in the owner API's spelling (`core::TaskState::as_str`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(rename = "TaskState"))]
#[serde(rename_all = "kebab-case")]
pub enum TaskStateView {
    Submitted,
    Working,
    InputRequired,
    /// Never produced for a real desk, but a task read back from elsewhere may carry it.
    AuthRequired,
    Completed,
    Failed,
    Canceled,
    Rejected,
}

impl From<taskkeeper_core::TaskState> for TaskStateView {
    fn from(s: taskkeeper_core::TaskState) -> Self {
        use taskkeeper_core::TaskState as S;
        match s {
            S::Submitted => Self::Submitted,
            S::Working => Self::Working,
            S::InputRequired => Self::InputRequired,
            S::AuthRequired => Self::AuthRequired,
            S::Completed => Self::Completed,
            S::Failed => Self::Failed,
            S::Canceled => Self::Canceled,
            S::Rejected => Self::Rejected,
        }
    }
}

impl TaskStateView {
    /// The spelling on the wire, the same as `core::TaskState::as_str`.
    pub fn as_str(self) -> &'static str {
        taskkeeper_core::TaskState::from(self).as_str()
    }
}

impl From<TaskStateView> for taskkeeper_core::TaskState {
    fn from(s: TaskStateView) -> Self {
        use taskkeeper_core::TaskState as S;
        match s {
            TaskStateView::Submitted => S::Submitted,
            TaskStateView::Working => S::Working,
            TaskStateView::InputRequired => S::InputRequired,
            TaskStateView::AuthRequired => S::AuthRequired,
            TaskStateView::Completed => S::Completed,
            TaskStateView::Failed => S::Failed,
            TaskStateView::Canceled => S::Canceled,
            TaskStateView::Rejected => S::Rejected,
        }
    }
}

impl std::fmt::Display for TaskStateView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who wrote a message of a task's history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "kebab-case")]
pub enum MessageFrom {
    Asker,
    Worker,
}

/// What a session is doing (`core::Activity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(rename = "Activity"))]
#[serde(rename_all = "kebab-case")]
pub enum ActivityView {
    Busy,
    Idle,
    WaitingOnOwner,
    StoppedByOwner,
    Ended,
}

impl std::fmt::Display for MessageFrom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&wire_name(self))
    }
}

impl std::fmt::Display for ActivityView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&wire_name(self))
    }
}

/// A unit variant's name as the JSON spells it, so what the CLI prints cannot differ from
/// what the API sends.
fn wire_name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => String::new(),
    }
}

impl From<taskkeeper_core::Activity> for ActivityView {
    fn from(a: taskkeeper_core::Activity) -> Self {
        use taskkeeper_core::Activity as A;
        match a {
            A::Busy => Self::Busy,
            A::Idle => Self::Idle,
            A::WaitingOnOwner => Self::WaitingOnOwner,
            A::StoppedByOwner => Self::StoppedByOwner,
            A::Ended => Self::Ended,
        }
    }
}
