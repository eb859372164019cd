//! The task state machine: one pure function, [`apply`], from (task, event, now) to the next
//! task or a typed refusal. Every rule of design.md §3 about a single task lives here; the store
//! calls it inside its write transaction and the adapters never re-derive it.
//!
//! Outcomes:
//! - a change returns the task with `version + 1` and `updated_at = now`;
//! - an idempotent repeat (cancel of a canceled task, a second acknowledgement) returns the
//!   task unchanged, same version, so the store writes nothing;
//! - anything else is a [`TransitionError`] naming the task, its state and what to do.

use crate::clock::Timestamp;
use crate::task::{Artifact, Message, Part, Task, TaskId, TaskState};

/// Something that happens to a task.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The desk is free and the task is handed to the session: SUBMITTED → WORKING.
    Start,
    /// The worker says the task is finished (`task_update done`).
    WorkerDone { summary: String },
    /// The worker says what it needs from the asker (`task_update blocked`).
    WorkerBlocked { need: String },
    /// The worker says it cannot be done (`task_update failed`).
    WorkerFailed { why: String },
    /// The worker declines the task (`task_update rejected`): it will not do it, and says
    /// why. Like a failure it ends the task, but the asker learns the work was never taken on
    /// (A2A's REJECTED) rather than tried and lost.
    WorkerRejected { reason: String },
    /// The worker attaches artifacts (files, data) to an open task, before or as it ends
    /// it; the state does not change. An artifact replaces the task's artifact of the same
    /// id, so a repeat changes nothing.
    AddArtifacts { artifacts: Vec<Artifact> },
    /// The worker sends an artifact in chunks: a chunk with an id that is not arriving in
    /// chunks starts the artifact (replacing one of that id); a later chunk's parts are
    /// appended to it. `last_chunk` ends it. Chunks carry no ids, so a resent chunk is
    /// appended again: a sender that may resend uses `AddArtifacts`.
    AppendArtifact {
        artifact: Artifact,
        last_chunk: bool,
    },
    /// The asker writes again with this task's id. An answer to INPUT_REQUIRED makes the task
    /// WORKING again and restarts its ladder; on a queued or working task it is added to the
    /// history for delivery.
    FollowUp { message: Message },
    /// The asker or the owner cancels.
    Cancel { reason: Option<String> },
    /// No ending within the expiry time.
    Expire,
    /// The watchdog sent a reminder for this task.
    Remind,
    /// The ladder ran out: the task is marked stalled and stops holding its desk.
    Stall,
    /// The owner resumes a stalled task: its ladder starts again.
    Resume,
    /// The asker acknowledges an ended task (bookkeeping only).
    Acknowledge,
    /// The desk's session was handed the task (or the asker's latest message); `to` is the
    /// session that took it, `None` for a desk's command.
    Delivered {
        to: Option<crate::session::SessionId>,
    },
    /// The session the task was handed to has ended: it goes back to its desk, to be handed
    /// again, with its header, to the desk's next session (when [`crate::queue::goes_back`]
    /// says so; otherwise nothing changes). A new session starts a new ladder.
    HandBack { from: crate::session::SessionId },
    /// The session was told that a task it had was canceled.
    CancelTold,
    /// The worker's latest words at the end of a turn.
    WorkerSaid { text: String },
    /// The desk's session started or stopped waiting on the owner.
    OwnerWait { waiting: bool },
}

impl Event {
    /// A short name for logs and tests.
    pub fn name(&self) -> &'static str {
        match self {
            Event::Start => "start",
            Event::WorkerDone { .. } => "done",
            Event::WorkerBlocked { .. } => "blocked",
            Event::WorkerFailed { .. } => "failed",
            Event::WorkerRejected { .. } => "rejected",
            Event::AddArtifacts { .. } => "add-artifacts",
            Event::AppendArtifact { .. } => "append-artifact",
            Event::FollowUp { .. } => "follow-up",
            Event::Cancel { .. } => "cancel",
            Event::Expire => "expire",
            Event::Remind => "remind",
            Event::Stall => "stall",
            Event::Resume => "resume",
            Event::Acknowledge => "acknowledge",
            Event::Delivered { .. } => "delivered",
            Event::HandBack { .. } => "hand-back",
            Event::CancelTold => "cancel-told",
            Event::WorkerSaid { .. } => "worker-said",
            Event::OwnerWait { .. } => "owner-wait",
        }
    }
}

/// Why a transition was refused. Each message names the task, its state and the way forward.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransitionError {
    #[error(
        "task {id} has already ended ({state}); an ended task never changes: send a new task that names it in referenceTaskIds"
    )]
    Ended { id: TaskId, state: TaskState },
    #[error("task {id} has ended as {state} and cannot be canceled")]
    NotCancelable { id: TaskId, state: TaskState },
    #[error("task {id} is still open ({state}); only an ended task can be acknowledged")]
    StillOpen { id: TaskId, state: TaskState },
    #[error("task {id} is {state}, not queued; only a queued task can start")]
    NotQueued { id: TaskId, state: TaskState },
    #[error(
        "task {id} is {state}; only a working task that is not stalled gets reminders or stalls"
    )]
    NotWorking { id: TaskId, state: TaskState },
    #[error("task {id} is not stalled; only a stalled task can be resumed")]
    NotStalled { id: TaskId },
    #[error("task {id} has nothing to deliver ({state})")]
    NothingToDeliver { id: TaskId, state: TaskState },
}

/// Apply `event` to `task` at `now`.
pub fn apply(task: &Task, event: Event, now: Timestamp) -> Result<Task, TransitionError> {
    let state = task.state();
    let id = || task.id.clone();
    let ended = || TransitionError::Ended { id: id(), state };
    let mut next = task.clone();

    match event {
        Event::Start => {
            if state != TaskState::Submitted {
                return Err(TransitionError::NotQueued { id: id(), state });
            }
            next.set_status(TaskState::Working, None, now);
        }
        Event::WorkerDone { summary } => {
            if state.is_terminal() {
                return Err(ended());
            }
            let msg = next.agent_message(&summary);
            next.artifacts.retain(|a| a.artifact_id != RESULT_ARTIFACT);
            next.artifacts.push(Artifact {
                artifact_id: RESULT_ARTIFACT.to_owned(),
                name: Some(RESULT_ARTIFACT.to_owned()),
                description: None,
                parts: vec![Part::text(summary)],
                metadata: None,
                extensions: Vec::new(),
            });
            next.set_status(TaskState::Completed, Some(msg), now);
        }
        Event::WorkerBlocked { need } => {
            if state.is_terminal() {
                return Err(ended());
            }
            let msg = next.agent_message(&need);
            // The worker spoke: whatever stall there was is over; the asker now owes an answer.
            next.stalled_at = None;
            next.set_status(TaskState::InputRequired, Some(msg), now);
        }
        Event::WorkerFailed { why } => {
            if state.is_terminal() {
                return Err(ended());
            }
            let msg = next.agent_message(&why);
            next.set_status(TaskState::Failed, Some(msg), now);
        }
        Event::WorkerRejected { reason } => {
            if state.is_terminal() {
                return Err(ended());
            }
            let msg = next.agent_message(&reason);
            next.set_status(TaskState::Rejected, Some(msg), now);
        }
        Event::AddArtifacts { artifacts } => {
            if state.is_terminal() {
                return Err(ended());
            }
            if artifacts.iter().all(|a| task.artifacts.contains(a)) {
                return Ok(next);
            }
            for a in artifacts {
                // A whole artifact ends any chunks that were arriving for its id.
                next.artifacts_in_progress.retain(|id| *id != a.artifact_id);
                match next
                    .artifacts
                    .iter_mut()
                    .find(|kept| kept.artifact_id == a.artifact_id)
                {
                    Some(kept) => *kept = a,
                    None => next.artifacts.push(a),
                }
            }
        }
        Event::AppendArtifact {
            artifact,
            last_chunk,
        } => {
            if state.is_terminal() {
                return Err(ended());
            }
            let id = artifact.artifact_id.clone();
            let arriving = task.artifacts_in_progress.contains(&id);
            if arriving && artifact.parts.is_empty() && !last_chunk {
                return Ok(next);
            }
            match next
                .artifacts
                .iter_mut()
                .find(|kept| kept.artifact_id == id)
            {
                Some(kept) if arriving => kept.parts.extend(artifact.parts),
                Some(kept) => *kept = artifact,
                None => next.artifacts.push(artifact),
            }
            next.artifacts_in_progress.retain(|kept| *kept != id);
            if !last_chunk {
                next.artifacts_in_progress.push(id);
            }
        }
        Event::FollowUp { mut message } => {
            if state.is_terminal() {
                return Err(ended());
            }
            // A resend of a message the task already has changes nothing. A resend is the same
            // message again, id and parts: a client that reuses an id for new words (the
            // conformance kit does, against the id's uniqueness) still gets them heard.
            if task
                .history
                .iter()
                .any(|m| m.message_id == message.message_id && m.parts == message.parts)
            {
                return Ok(next);
            }
            message.task_id = Some(task.id.as_str().to_owned());
            message.context_id = Some(task.context_id.clone());
            next.history.push(message);
            // The session has not seen this message yet.
            next.delivered_at = None;
            if state.is_interrupted() {
                next.set_status(TaskState::Working, None, now);
            }
            // The asker wrote: a new ladder starts, a stall is over.
            next.reminders_sent = 0;
            next.stalled_at = None;
        }
        Event::Cancel { reason } => match state {
            TaskState::Canceled => return Ok(next),
            s if s.is_terminal() => return Err(TransitionError::NotCancelable { id: id(), state }),
            _ => {
                let msg = reason.map(|r| next.agent_message(&r));
                next.set_status(TaskState::Canceled, msg, now);
            }
        },
        Event::Expire => {
            if state.is_terminal() {
                return Err(ended());
            }
            let msg = next
                .agent_message("Expired: the worker reported no ending within the expiry time.");
            next.expired_at = Some(now);
            next.set_status(TaskState::Canceled, Some(msg), now);
        }
        Event::Remind => {
            if state != TaskState::Working || task.stalled_at.is_some() {
                return Err(TransitionError::NotWorking { id: id(), state });
            }
            next.reminders_sent += 1;
            next.last_reminder_at = Some(now);
            next.reminder_times.push(now);
            let extra = next
                .reminder_times
                .len()
                .saturating_sub(crate::task::REMINDER_TIMES_KEPT);
            next.reminder_times.drain(..extra);
        }
        Event::Stall => {
            if state != TaskState::Working || task.stalled_at.is_some() {
                return Err(TransitionError::NotWorking { id: id(), state });
            }
            next.stalled_at = Some(now);
        }
        Event::Resume => {
            if task.stalled_at.is_none() || state.is_terminal() {
                return Err(TransitionError::NotStalled { id: id() });
            }
            next.stalled_at = None;
            next.reminders_sent = 0;
        }
        Event::Delivered { to } => {
            if !task.to_deliver() {
                return Err(TransitionError::NothingToDeliver { id: id(), state });
            }
            next.delivered_at = Some(now);
            if to.is_some() {
                next.delivered_to = to;
            }
        }
        Event::HandBack { from } => {
            if !crate::queue::goes_back(task, &from) {
                return Ok(next);
            }
            next.delivered_at = None;
            next.delivered_to = None;
            next.reminders_sent = 0;
        }
        Event::CancelTold => {
            if !task.cancel_to_tell() {
                return Err(TransitionError::NothingToDeliver { id: id(), state });
            }
            next.cancel_told_at = Some(now);
        }
        Event::WorkerSaid { text } => {
            if state.is_terminal() {
                return Err(ended());
            }
            if task.last_words.as_deref() == Some(text.as_str()) {
                return Ok(next);
            }
            next.last_words = Some(text);
        }
        Event::OwnerWait { waiting } => {
            if state.is_terminal() {
                return Err(ended());
            }
            if task.waiting_on_owner == waiting {
                return Ok(next);
            }
            next.waiting_on_owner = waiting;
        }
        Event::Acknowledge => {
            if !state.is_terminal() {
                return Err(TransitionError::StillOpen { id: id(), state });
            }
            if task.acknowledged_at.is_some() {
                return Ok(next);
            }
            next.acknowledged_at = Some(now);
        }
    }

    next.version = task.version + 1;
    next.updated_at = now;
    Ok(next)
}

/// The artifact that carries the worker's summary of a finished task.
pub const RESULT_ARTIFACT: &str = "result";

impl Task {
    fn set_status(&mut self, state: TaskState, message: Option<Message>, now: Timestamp) {
        if let Some(m) = &message {
            self.history.push(m.clone());
        }
        self.status.state = state;
        self.status.message = message;
        if state != TaskState::Working {
            self.waiting_on_owner = false;
        }
        self.status.timestamp = now;
        if state != TaskState::Submitted {
            self.queue_position = None;
        }
    }

    /// A message from the worker's side. Its id is derived from the task and the version it
    /// creates, so the transition stays deterministic.
    fn agent_message(&self, text: &str) -> Message {
        let mut m = Message::agent_text(format!("{}-v{}", self.id, self.version + 1), text);
        m.task_id = Some(self.id.as_str().to_owned());
        m.context_id = Some(self.context_id.clone());
        m
    }
}
