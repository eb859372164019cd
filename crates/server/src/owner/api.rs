//! The owner API's wire shapes (JSON over HTTP, and the same values through the tray app's
//! commands), converted from the core's types so the core can change without changing them.

use serde::{Deserialize, Serialize};
use taskkeeper_core::task::PartContent;
use taskkeeper_core::{Desk, Message, Role, Task, Timestamp};

mod card_key;
mod names;
mod network;
mod notice;
mod settings;
/// The error body is every area's ([`crate::error`]); the owner API's clients read it here.
pub use crate::error::ErrorBody;
pub use card_key::CardKeyView;
pub use names::{
    ActivityView, HoldView, LabelKindView, MessageFrom, StepKind, TaskStateView, TurnOriginView,
};
pub use network::{NetworkStateView, NetworkView};
pub use notice::NoticeView;
pub use settings::{SettingKindView, SettingView, SettingsCatalogue};

/// A task as the owner's list shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct TaskView {
    pub id: String,
    pub context_id: String,
    pub desk: String,
    pub asker: String,
    pub state: TaskStateView,
    /// The words every surface shows for the task's state (`core::Task::label`): `queued #2`,
    /// `working`, `stalled`, `waiting on you`, `blocked`, `completed`, `expired`...
    pub label: String,
    /// Which label that is, for styling.
    pub label_kind: LabelKindView,
    /// The asker's request.
    pub request: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub queue_position: Option<u32>,
    pub reminders_sent: u32,
    pub last_reminder_at: Option<Timestamp>,
    pub stalled_at: Option<Timestamp>,
    pub expired_at: Option<Timestamp>,
    pub acknowledged_at: Option<Timestamp>,
    pub last_words: Option<String>,
    /// A permission prompt of the desk's session waits on the owner.
    pub waiting_on_owner: bool,
    /// When the desk's session was handed the task (`None` while it waits to be delivered).
    pub delivered_at: Option<Timestamp>,
    /// The text of the latest status: the summary, what is needed, why it failed.
    pub status_text: Option<String>,
    pub version: u64,
    /// The ladder as the owner's views draw it (`core::watchdog::timeline`); filled in by
    /// the owner service's task lists and details, absent elsewhere (notices).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub timeline: Option<TimelineView>,
}

/// A task's ladder: what happened and what comes next if its session stays quiet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct TimelineView {
    // No "now": the view is a function of what is stored (and the settings), so reading a
    // task twice gives the same answer; the picture takes its "now" from the reader's clock.
    pub created_at: Timestamp,
    pub delivered_at: Option<Timestamp>,
    /// When the holding session went quiet, while the ladder runs.
    pub quiet_since: Option<Timestamp>,
    /// The current ladder's reminders, oldest first.
    pub reminders: Vec<Timestamp>,
    /// The steps to come: reminders, then the stall.
    pub due: Vec<StepView>,
    pub stalled_at: Option<Timestamp>,
    pub ended_at: Option<Timestamp>,
    pub expires_at: Option<Timestamp>,
    /// The holding session's turns since it was handed the task.
    pub turns: Vec<TurnView>,
    /// Why nothing is due; `null` while the ladder runs.
    pub hold: Option<HoldView>,
    /// With `rate-limited`: until when.
    pub hold_until: Option<Timestamp>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct StepView {
    pub at: Timestamp,
    pub kind: StepKind,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct TurnView {
    pub started_at: Timestamp,
    pub ended_at: Option<Timestamp>,
    /// Who started it.
    pub origin: TurnOriginView,
}

impl From<&taskkeeper_core::watchdog::Timeline> for TimelineView {
    fn from(t: &taskkeeper_core::watchdog::Timeline) -> Self {
        use taskkeeper_core::session::TurnOrigin;
        use taskkeeper_core::watchdog::{Hold, Rung};
        let (hold, hold_until) = match t.hold {
            None => (None, None),
            Some(h) => {
                let (hold, until) = match h {
                    Hold::Ended => (HoldView::Ended, None),
                    Hold::Stalled => (HoldView::Stalled, None),
                    Hold::Queued => (HoldView::Queued, None),
                    Hold::WaitsOnAsker => (HoldView::WaitsOnAsker, None),
                    Hold::WaitsOnOwner => (HoldView::WaitsOnOwner, None),
                    Hold::NotDelivered => (HoldView::NotDelivered, None),
                    Hold::NoSession => (HoldView::NoSession, None),
                    Hold::Paused => (HoldView::Paused, None),
                    Hold::Busy => (HoldView::Busy, None),
                    Hold::StoppedByOwner => (HoldView::StoppedByOwner, None),
                    Hold::RateLimited(until) => (HoldView::RateLimited, Some(until)),
                    Hold::WakesItself(until) => (HoldView::WakesItself, Some(until)),
                };
                (Some(hold), until)
            }
        };
        Self {
            created_at: t.created_at,
            delivered_at: t.delivered_at,
            quiet_since: t.quiet_since,
            reminders: t.reminders.clone(),
            due: t
                .due
                .iter()
                .map(|s| StepView {
                    at: s.at,
                    kind: match s.rung {
                        Rung::Remind => StepKind::Remind,
                        Rung::Stall => StepKind::Stall,
                    },
                })
                .collect(),
            stalled_at: t.stalled_at,
            ended_at: t.ended_at,
            expires_at: t.expires_at,
            turns: t
                .turns
                .iter()
                .map(|x| TurnView {
                    started_at: x.started_at,
                    ended_at: x.ended_at,
                    origin: match x.origin {
                        TurnOrigin::Owner => TurnOriginView::Owner,
                        TurnOrigin::Taskkeeper => TurnOriginView::Taskkeeper,
                        TurnOrigin::Background => TurnOriginView::Background,
                    },
                })
                .collect(),
            hold,
            hold_until,
        }
    }
}

/// `GET /api/digest`: what happened since the owner last took a digest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct DigestView {
    /// The last digest taken; `null`: never.
    pub since: Option<Timestamp>,
    pub until: Timestamp,
    pub counts: DigestCounts,
    pub stalled: Vec<TaskView>,
    pub finished: Vec<TaskView>,
    pub waiting_on_owner: Vec<TaskView>,
    pub ack_pending: Vec<TaskView>,
    pub reminders: Vec<ReminderView>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct DigestCounts {
    pub stalled: usize,
    pub finished: usize,
    pub waiting_on_owner: usize,
    pub ack_pending: usize,
    pub reminders: usize,
}

impl From<taskkeeper_core::digest::Counts> for DigestCounts {
    fn from(c: taskkeeper_core::digest::Counts) -> Self {
        Self {
            stalled: c.stalled,
            finished: c.finished,
            waiting_on_owner: c.waiting_on_owner,
            ack_pending: c.ack_pending,
            reminders: c.reminders,
        }
    }
}

/// One reminder sent: to which task's session, when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ReminderView {
    pub task: String,
    pub desk: String,
    pub request: String,
    pub at: Timestamp,
}

impl From<&taskkeeper_core::digest::Digest<'_>> for DigestView {
    fn from(d: &taskkeeper_core::digest::Digest<'_>) -> Self {
        let views = |ts: &[&Task]| ts.iter().map(|t| TaskView::from(*t)).collect();
        Self {
            since: d.since,
            until: d.until,
            counts: d.counts().into(),
            stalled: views(&d.stalled),
            finished: views(&d.finished),
            waiting_on_owner: views(&d.waiting_on_owner),
            ack_pending: views(&d.ack_pending),
            reminders: d
                .reminders
                .iter()
                .map(|r| ReminderView {
                    task: r.task.id.to_string(),
                    desk: r.task.desk.to_string(),
                    request: r.task.request_text(),
                    at: r.at,
                })
                .collect(),
        }
    }
}

impl From<&Task> for TaskView {
    fn from(t: &Task) -> Self {
        Self {
            id: t.id.to_string(),
            context_id: t.context_id.clone(),
            desk: t.desk.to_string(),
            asker: t.asker.clone(),
            state: t.state().into(),
            label: t.label().to_string(),
            label_kind: t.label().into(),
            request: t.request_text(),
            created_at: t.created_at,
            updated_at: t.updated_at,
            queue_position: t.queue_position,
            reminders_sent: t.reminders_sent,
            last_reminder_at: t.last_reminder_at,
            stalled_at: t.stalled_at,
            expired_at: t.expired_at,
            acknowledged_at: t.acknowledged_at,
            last_words: t.last_words.clone(),
            waiting_on_owner: t.waiting_on_owner,
            delivered_at: t.delivered_at,
            status_text: t.status.message.as_ref().map(Message::text),
            version: t.version,
            timeline: None,
        }
    }
}

/// One message of a task's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct MessageView {
    pub message_id: String,
    pub from: MessageFrom,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ArtifactView {
    pub artifact_id: String,
    pub name: Option<String>,
    pub text: String,
}

/// A task with its history and artifacts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct TaskDetail {
    #[serde(flatten)]
    pub task: TaskView,
    pub history: Vec<MessageView>,
    pub artifacts: Vec<ArtifactView>,
}

impl From<&Task> for TaskDetail {
    fn from(t: &Task) -> Self {
        Self {
            task: TaskView::from(t),
            history: t
                .history
                .iter()
                .map(|m| MessageView {
                    message_id: m.message_id.clone(),
                    from: match m.role {
                        Role::User => MessageFrom::Asker,
                        Role::Agent => MessageFrom::Worker,
                    },
                    text: m.text(),
                })
                .collect(),
            artifacts: t
                .artifacts
                .iter()
                .map(|a| ArtifactView {
                    artifact_id: a.artifact_id.clone(),
                    name: a.name.clone(),
                    text: a
                        .parts
                        .iter()
                        .filter_map(|p| match &p.content {
                            PartContent::Text(t) => Some(t.as_str()),
                            _ => None,
                        })
                        .collect::<Vec<_>>()
                        .join("\n\n"),
                })
                .collect(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct DeskView {
    pub name: String,
    pub agent: String,
    pub dir: String,
    /// The command that delivers text to the desk's agent, if it has one.
    #[serde(default)]
    pub deliver_command: Option<String>,
    /// The desk launches a headless session by itself when it has work and no live session.
    #[serde(default)]
    pub auto_launch: bool,
    /// Its open tasks (queued, working, waiting on the asker).
    #[serde(default)]
    pub open_tasks: usize,
    /// A session of the desk is live.
    #[serde(default)]
    pub live_session: bool,
    /// It has work a session would take (a queued task, a working one not stalled) and no
    /// live session: nothing moves until one is launched or started.
    #[serde(default)]
    pub needs_session: bool,
    /// With `autoLaunch`: the guard holds the next launch until then (launches that did not
    /// move the work).
    #[serde(default)]
    pub auto_launch_retry_at: Option<Timestamp>,
    /// With `autoLaunch`: the desk gave up launching by itself after too many launches that
    /// did not move the work; the owner's launch (or turning the setting off and on) resets
    /// it.
    #[serde(default)]
    pub auto_launch_gave_up: bool,
    pub created_at: Timestamp,
}

impl From<&Desk> for DeskView {
    fn from(d: &Desk) -> Self {
        Self {
            name: d.name.to_string(),
            agent: d.agent.to_string(),
            dir: d.dir.to_string_lossy().into_owned(),
            deliver_command: d.deliver_command.clone(),
            auto_launch: d.auto_launch,
            open_tasks: 0,
            live_session: false,
            needs_session: false,
            auto_launch_retry_at: None,
            auto_launch_gave_up: false,
            created_at: d.created_at,
        }
    }
}

/// `PATCH /api/desks/{name}`: the fields to change.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeskChange {
    /// A command, or null to remove it; absent: unchanged.
    #[serde(default, deserialize_with = "present")]
    #[cfg_attr(test, ts(optional))]
    pub deliver_command: Option<Option<String>>,
    /// Launch a session by itself when the desk has work and none is live; absent:
    /// unchanged.
    #[serde(default)]
    #[cfg_attr(test, ts(optional))]
    pub auto_launch: Option<bool>,
}

/// A field that is present (null included), as opposed to absent.
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewDeskRequest {
    pub name: String,
    pub dir: String,
    /// `claude-code` (the default), `codex`, `gemini` or `generic`.
    #[serde(default)]
    pub agent: Option<String>,
    /// A command that delivers text to the desk's agent (its stdin gets the text).
    #[serde(default)]
    pub deliver_command: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewTaskRequest {
    pub desk: String,
    pub text: String,
    /// Makes a resend idempotent; a fresh id is made when absent.
    #[serde(default)]
    pub message_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateRequest {
    /// `done`, `blocked`, `failed` or `rejected` (an ending), or `working` (attach, keep it open).
    pub status: String,
    /// The summary, the need or the reason; not needed with `working`.
    #[serde(default)]
    pub text: String,
    /// Files to attach as artifacts: absolute paths inside the task's desk's directory (or
    /// relative to it).
    #[serde(default)]
    pub files: Vec<String>,
    /// JSON values to attach as data artifacts.
    #[serde(default)]
    pub data: Vec<serde_json::Value>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CancelRequest {
    #[serde(default)]
    #[cfg_attr(test, ts(optional))]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct TaskList {
    pub tasks: Vec<TaskView>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DeskList {
    pub desks: Vec<DeskView>,
}

/// An asker as the owner sees it (never its token).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AskerView {
    pub name: String,
    pub created_at: Timestamp,
}

impl From<&taskkeeper_core::store::Asker> for AskerView {
    fn from(a: &taskkeeper_core::store::Asker) -> Self {
        Self {
            name: a.name.clone(),
            created_at: a.created_at,
        }
    }
}

/// A new asker and its token, shown once; with the network listener, where and how an
/// asker on another machine reaches it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewAsker {
    #[serde(flatten)]
    pub asker: AskerView,
    pub token: String,
    /// The key the cards are signed with, whose thumbprint the asker pins.
    pub card_key: CardKeyView,
    /// The network listener, when it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkView>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewAskerRequest {
    pub name: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AskerList {
    pub askers: Vec<AskerView>,
}

/// A session as the owner sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    pub id: String,
    pub desk: String,
    pub agent: String,
    pub activity: ActivityView,
    pub since: Timestamp,
    pub background: Vec<String>,
    pub rate_limited_until: Option<Timestamp>,
    /// The earliest wake-up the session scheduled for itself (it is not reminded before).
    #[serde(default)]
    pub wakes_at: Option<Timestamp>,
    pub last_words: Option<String>,
    pub tmux_pane: Option<String>,
    pub pid: Option<u32>,
    /// Taskkeeper launched it headless and speaks to it on its stdin (the owner can stop it).
    #[serde(default)]
    pub headless: bool,
    /// What a headless session asks the owner to allow (it waits until answered).
    #[serde(default)]
    pub permission: Option<PermissionView>,
    /// Why the latest push to it did not deliver (nothing was delivered since).
    #[serde(default)]
    pub delivery_problem: Option<DeliveryProblemView>,
    /// The owner paused this session's reminders.
    pub reminders_paused: bool,
    pub updated_at: Timestamp,
}

/// Why a push to a session did not deliver: the way in tried (`tmux paste`, `command`, …),
/// why, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct DeliveryProblemView {
    pub method: String,
    pub why: String,
    pub at: Timestamp,
}

impl From<&crate::delivery::DeliveryProblem> for DeliveryProblemView {
    fn from(p: &crate::delivery::DeliveryProblem) -> Self {
        Self {
            method: p.method.as_str().to_owned(),
            why: p.why.clone(),
            at: p.at,
        }
    }
}

impl From<&taskkeeper_core::Session> for SessionView {
    fn from(s: &taskkeeper_core::Session) -> Self {
        Self {
            id: s.id.to_string(),
            desk: s.desk.to_string(),
            agent: s.agent.to_string(),
            activity: s.activity.into(),
            since: s.since,
            background: s.background.clone(),
            rate_limited_until: s.rate_limited_until,
            wakes_at: s.wakes_at,
            last_words: s.last_words.clone(),
            tmux_pane: s.reach.tmux_pane.clone(),
            pid: s.reach.pid,
            headless: s.reach.headless,
            permission: None,
            delivery_problem: None,
            reminders_paused: s.watch.paused,
            updated_at: s.updated_at,
        }
    }
}

/// A tool a launched session asks to use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct PermissionView {
    pub request_id: String,
    pub tool: String,
    pub description: Option<String>,
    /// The tool's input as JSON text, cut to 2000 characters.
    pub input: String,
}

impl From<&crate::agents::permission::Permission> for PermissionView {
    fn from(p: &crate::agents::permission::Permission) -> Self {
        Self {
            request_id: p.request_id.clone(),
            tool: p.tool.clone(),
            description: p.description.clone(),
            input: p.input.clone(),
        }
    }
}

/// `POST /api/sessions/{id}/permission`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PermissionAnswer {
    pub allow: bool,
    /// With a denial: what the model reads.
    #[serde(default)]
    #[cfg_attr(test, ts(optional))]
    pub message: Option<String>,
    /// The request being answered, as the owner saw it: if the session now asks something
    /// else, the answer is refused instead of landing on a request the owner never saw.
    #[serde(default)]
    #[cfg_attr(test, ts(optional))]
    pub request_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SessionList {
    pub sessions: Vec<SessionView>,
}

/// An agent Taskkeeper can connect (`GET /api/agents`), as the settings panel lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct AgentView {
    /// `claude-code`: what the routes and `taskkeeper connect` name it.
    pub agent: String,
    /// `Claude Code`: what people call it.
    pub name: String,
    /// It is on this machine (its command on the PATH, or its settings in the home).
    pub found: bool,
    /// Taskkeeper's hooks or MCP server are in its settings.
    pub connected: bool,
    /// Connected, and everything the settings name runs and reaches this daemon.
    pub working: bool,
    /// What is fine, a line each (`` `taskkeeper` runs (taskkeeper 0.1.0) ``).
    pub ok: Vec<String>,
    /// What is wrong, a line each, each saying what to do.
    pub problems: Vec<String>,
    /// Disconnect has something to restore (a backup of the files as they were).
    pub can_undo: bool,
    /// The files Connect changes.
    pub files: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct AgentList {
    pub agents: Vec<AgentView>,
}

/// What Connect or Disconnect did: a line per file, and the agent afterwards.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct AgentChange {
    pub changes: Vec<String>,
    pub agent: AgentView,
}

/// `POST /api/agents/{agent}/connect`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConnectRequest {
    /// Name a `taskkeeper` that lives in a Cargo build directory anyway.
    #[serde(default)]
    pub force: bool,
}
