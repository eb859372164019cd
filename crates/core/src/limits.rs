//! The bounds on what one caller can make Taskkeeper keep, each rule once: open tasks per
//! asker, the size of a message and of a task, the history a reply carries by default, how
//! many sessions are kept and which one makes room, and how many desks sessions may create.
//!
//! The numbers are settings ([`Limits`]); the store asks these functions inside its write
//! transaction, so two callers racing for the last place cannot both pass, and every edge
//! (A2A, MCP, the owner API, the hooks) turns the one [`LimitExceeded`] into its own
//! protocol's refusal. A refusal changes nothing.

use std::io;

use serde::Serialize;

use crate::asker;
use crate::session::SessionId;
use crate::settings::{Limits, format_bytes};
use crate::task::{Message, NewTask, Task};

/// Which bound a refusal is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    OpenTasksPerAsker,
    MessageBytes,
    TaskBytes,
    FileBytes,
    Sessions,
    CreateDesks,
    StreamsPerCaller,
    PushConfigsPerTask,
    /// Streams and blocking waits an asker from the network opens per minute.
    StreamsPerMinute,
}

impl Limit {
    /// The setting that holds the bound.
    pub fn setting(self) -> &'static str {
        match self {
            Limit::OpenTasksPerAsker => "limits.open_tasks_per_asker",
            Limit::MessageBytes => "limits.message_bytes",
            Limit::TaskBytes => "limits.task_bytes",
            Limit::FileBytes => "limits.file_bytes",
            Limit::Sessions => "sessions.max",
            Limit::CreateDesks => "sessions.create_desks_max",
            Limit::StreamsPerCaller => "a2a.streams_per_caller",
            Limit::PushConfigsPerTask => "push.configs_per_task",
            Limit::StreamsPerMinute => "network.streams_per_minute",
        }
    }

    /// Whether the bound is on a size (the others count things).
    pub fn is_size(self) -> bool {
        matches!(
            self,
            Limit::MessageBytes | Limit::TaskBytes | Limit::FileBytes
        )
    }
}

/// A refusal: what was over which bound, the setting that holds it, and the way forward.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitExceeded {
    #[error(
        "asker {asker} already has {open} open tasks, the most limits.open_tasks_per_asker ({max}) allows; wait for one to end or cancel one (the owner may raise limits.open_tasks_per_asker)"
    )]
    OpenTasks { asker: String, open: u64, max: u64 },
    #[error(
        "the message is {size} bytes, more than limits.message_bytes ({}) allows; send a shorter message (the owner may raise limits.message_bytes)",
        format_bytes(*max)
    )]
    Message { size: u64, max: u64 },
    #[error(
        "{what} would be {size} bytes, more than limits.task_bytes ({}) allows; send a new task that names it in referenceTaskIds (the owner may raise limits.task_bytes)",
        format_bytes(*max)
    )]
    Task { what: String, size: u64, max: u64 },
    #[error(
        "{what} is {size} bytes, more than limits.file_bytes ({}) allows; {fix} (the owner may raise limits.file_bytes)",
        format_bytes(*max)
    )]
    File {
        what: String,
        size: u64,
        max: u64,
        fix: &'static str,
    },
    #[error(
        "{kept} sessions are kept and none of them has ended, the most sessions.max ({max}) allows; end a session (the owner may raise sessions.max)"
    )]
    Sessions { kept: u64, max: u64 },
    #[error(
        "there are {desks} desks, and sessions create a desk only while there are fewer than sessions.create_desks_max ({max}); add the desk with `taskkeeper desk add NAME --dir DIR`, or raise sessions.create_desks_max"
    )]
    CreateDesks { desks: u64, max: u64 },
    #[error(
        "too many open streams: {caller} already has {open} streams and blocking waits open, the most a2a.streams_per_caller ({max}) allows; close one, use SendMessage with returnImmediately and GetTask, or ask the owner to raise a2a.streams_per_caller"
    )]
    Streams { caller: String, open: u64, max: u64 },
    #[error(
        "task {task} already has {kept} push notification configs, the most push.configs_per_task ({max}) allows; delete one (DeleteTaskPushNotificationConfig) or set one with the id of an existing one to replace it"
    )]
    PushConfigs { task: String, kept: u64, max: u64 },
    #[error(
        "{caller} opened {max} streams and blocking waits in the last minute, the most network.streams_per_minute allows on the network listener; try again in {retry_after_s} s, or follow the task with GetTask (the owner may raise network.streams_per_minute)"
    )]
    StreamsPerMinute {
        caller: String,
        max: u64,
        retry_after_s: u64,
    },
}

impl LimitExceeded {
    pub fn limit(&self) -> Limit {
        match self {
            LimitExceeded::OpenTasks { .. } => Limit::OpenTasksPerAsker,
            LimitExceeded::Message { .. } => Limit::MessageBytes,
            LimitExceeded::Task { .. } => Limit::TaskBytes,
            LimitExceeded::File { .. } => Limit::FileBytes,
            LimitExceeded::Sessions { .. } => Limit::Sessions,
            LimitExceeded::CreateDesks { .. } => Limit::CreateDesks,
            LimitExceeded::Streams { .. } => Limit::StreamsPerCaller,
            LimitExceeded::PushConfigs { .. } => Limit::PushConfigsPerTask,
            LimitExceeded::StreamsPerMinute { .. } => Limit::StreamsPerMinute,
        }
    }

    /// The bound's value, as the setting writes it.
    pub fn max(&self) -> String {
        match self {
            LimitExceeded::Message { max, .. }
            | LimitExceeded::Task { max, .. }
            | LimitExceeded::File { max, .. } => format_bytes(*max),
            LimitExceeded::OpenTasks { max, .. }
            | LimitExceeded::Sessions { max, .. }
            | LimitExceeded::CreateDesks { max, .. }
            | LimitExceeded::Streams { max, .. }
            | LimitExceeded::PushConfigs { max, .. }
            | LimitExceeded::StreamsPerMinute { max, .. } => max.to_string(),
        }
    }
}

/// Counts what serialising writes, keeping none of it.
struct Counter(u64);

impl io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The size of `value` as stored (JSON), without building the text.
fn stored_size(value: &impl Serialize) -> u64 {
    let mut counter = Counter(0);
    // Serialising plain data into a counter cannot fail; a failure would count short, and
    // the store's own write would then fail on the same value.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// A message's size as stored.
pub fn message_size(m: &Message) -> u64 {
    stored_size(m)
}

/// What a task keeps that its asker can grow: history, artifacts and metadata, as stored.
pub fn task_size(t: &Task) -> u64 {
    stored_size(&t.history) + stored_size(&t.artifacts) + stored_size(&t.metadata)
}

fn check_message(size: u64, l: &Limits) -> Result<(), LimitExceeded> {
    if size > l.message_bytes {
        return Err(LimitExceeded::Message {
            size,
            max: l.message_bytes,
        });
    }
    Ok(())
}

/// May `new` become a task, while its asker has `open` open tasks? The owner's own tasks
/// are not counted (the owner may do everything, and sets the limits); their size is.
pub fn new_task(new: &NewTask, open: u64, l: &Limits) -> Result<(), LimitExceeded> {
    let message = message_size(&new.request);
    check_message(message, l)?;
    let size = message + stored_size(&new.metadata);
    if size > l.task_bytes {
        return Err(LimitExceeded::Task {
            what: "the new task".to_owned(),
            size,
            max: l.task_bytes,
        });
    }
    if open >= l.open_tasks_per_asker && new.asker != asker::OWNER {
        return Err(LimitExceeded::OpenTasks {
            asker: new.asker.clone(),
            open,
            max: l.open_tasks_per_asker,
        });
    }
    Ok(())
}

/// May the asker's follow-up of `message_bytes` stay in the task, which is `after` with it?
pub fn follow_up(after: &Task, message_bytes: u64, l: &Limits) -> Result<(), LimitExceeded> {
    check_message(message_bytes, l)?;
    let size = task_size(after);
    if size > l.task_bytes {
        return Err(LimitExceeded::Task {
            what: format!("with this message, task {}", after.id),
            size,
            max: l.task_bytes,
        });
    }
    Ok(())
}

/// May a file of `size` bytes (`what` names it) be kept: a file part an asker sends inline
/// (decoded), or a file a worker attaches as an artifact? `fix` is the way forward for
/// whoever sent it.
pub fn file(what: &str, size: u64, fix: &'static str, l: &Limits) -> Result<(), LimitExceeded> {
    if size > l.file_bytes {
        return Err(LimitExceeded::File {
            what: what.to_owned(),
            size,
            max: l.file_bytes,
            fix,
        });
    }
    Ok(())
}

/// May task `task`, which has `kept` push configs other than the one being set, take one
/// more?
pub fn push_config(
    task: &crate::task::TaskId,
    kept: u64,
    s: &crate::settings::Push,
) -> Result<(), LimitExceeded> {
    if kept >= s.configs_per_task {
        return Err(LimitExceeded::PushConfigs {
            task: task.to_string(),
            kept,
            max: s.configs_per_task,
        });
    }
    Ok(())
}

/// How many of the most recent messages a reply carries: what the asker asked for
/// (`historyLength`; A2A lets a server return fewer, never more), else `limits.reply_history`.
pub fn reply_history(requested: Option<u32>, l: &Limits) -> u32 {
    requested.unwrap_or(l.reply_history)
}

/// Room for one more session while `kept` are kept: `Ok(None)` when there is room,
/// `Ok(Some(id))` when the oldest ended session (`oldest_ended`) gives up its place, and a
/// refusal when every kept session is live.
pub fn session_room(
    kept: u64,
    oldest_ended: Option<SessionId>,
    l: &Limits,
) -> Result<Option<SessionId>, LimitExceeded> {
    if kept < l.sessions_max {
        return Ok(None);
    }
    oldest_ended.map(Some).ok_or(LimitExceeded::Sessions {
        kept,
        max: l.sessions_max,
    })
}

/// May a session create a desk while there are `desks`?
pub fn desk_from_session(desks: u64, l: &Limits) -> Result<(), LimitExceeded> {
    if desks >= l.create_desks_max {
        return Err(LimitExceeded::CreateDesks {
            desks,
            max: l.create_desks_max,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Timestamp;
    use crate::task::TaskId;

    fn new(text: &str) -> NewTask {
        NewTask {
            desk: "web".parse().unwrap(),
            asker: "a".into(),
            request: Message::user_text("m1", text),
            context_id: None,
            metadata: serde_json::Map::new(),
        }
    }

    #[test]
    fn sizes_count_what_is_stored() {
        let m = Message::user_text("m1", "hello");
        assert_eq!(
            message_size(&m),
            serde_json::to_vec(&m).map_or(0, |v| v.len() as u64)
        );
    }

    #[test]
    fn a_new_task_is_bounded_by_size_and_by_its_askers_open_tasks() {
        let l = Limits {
            open_tasks_per_asker: 2,
            message_bytes: 1024,
            task_bytes: 2048,
            ..Limits::default()
        };
        assert_eq!(new_task(&new("hi"), 1, &l), Ok(()));
        let full = new_task(&new("hi"), 2, &l).unwrap_err();
        assert_eq!(full.limit(), Limit::OpenTasksPerAsker);
        assert!(full.to_string().contains("limits.open_tasks_per_asker (2)"));
        let mut owners = new("hi");
        owners.asker = asker::OWNER.into();
        assert_eq!(new_task(&owners, 2, &l), Ok(()), "the owner is not counted");
        let big = new_task(&new(&"x".repeat(2000)), 0, &l).unwrap_err();
        assert_eq!(big.limit(), Limit::MessageBytes);
        assert!(
            big.to_string().contains("limits.message_bytes (1KiB)"),
            "{big}"
        );
    }

    #[test]
    fn a_follow_up_is_bounded_by_the_task_it_grows() {
        let l = Limits {
            message_bytes: 1024,
            task_bytes: 2048,
            ..Limits::default()
        };
        let mut t = Task::submit(TaskId::from("t1"), new("hi"), 1, Timestamp::from_millis(0));
        assert_eq!(follow_up(&t, 100, &l), Ok(()));
        assert_eq!(
            follow_up(&t, 2000, &l).unwrap_err().limit(),
            Limit::MessageBytes
        );
        t.history.push(Message::user_text("m2", "x".repeat(2100)));
        let e = follow_up(&t, 100, &l).unwrap_err();
        assert_eq!(e.limit(), Limit::TaskBytes);
        assert!(e.to_string().contains("task t1"), "{e}");
    }

    #[test]
    fn replies_carry_what_was_asked_else_the_default() {
        let l = Limits::default();
        assert_eq!(reply_history(None, &l), 20);
        assert_eq!(reply_history(Some(0), &l), 0);
        assert_eq!(reply_history(Some(500), &l), 500);
    }

    #[test]
    fn a_new_session_takes_the_oldest_ended_ones_place_or_is_refused() {
        let l = Limits {
            sessions_max: 2,
            ..Limits::default()
        };
        assert_eq!(session_room(1, None, &l), Ok(None));
        let old = SessionId::from("old");
        assert_eq!(session_room(2, Some(old.clone()), &l), Ok(Some(old)));
        assert_eq!(
            session_room(2, None, &l).unwrap_err().limit(),
            Limit::Sessions
        );
        assert_eq!(desk_from_session(49, &Limits::default()), Ok(()));
        assert!(desk_from_session(50, &Limits::default()).is_err());
    }
}
