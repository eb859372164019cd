//! The words Taskkeeper puts into a session: deterministic text (no model writes it), always
//! marked as coming from Taskkeeper, naming the task id, the asker and how to end the task,
//! so the session knows what it holds and resumes instead of starting over.

use crate::desk::Desk;
use crate::task::{Role, Task};

/// Every text Taskkeeper writes into a session starts with this.
pub const MARK: &str = "[Taskkeeper]";

fn how_to_end(t: &Task) -> String {
    format!(
        "When you have finished, call the `task_update` tool with task_id \"{id}\" and status \"done\" \
         with a short summary; \"blocked\" with what you need from the asker; or \"failed\" with why. \
         (Without the tool: `taskkeeper task update {id} done \"summary\"`.) The task stays open until you do.",
        id = t.id
    )
}

/// A task handed to the session: header, the request, the asker's latest message if the
/// task was continued, and how to end it.
pub fn task_text(t: &Task) -> String {
    let mut text = format!(
        "{MARK} Task {} from {} (desk {}):\n\n{}",
        t.id,
        t.asker,
        t.desk,
        t.request_text()
    );
    let followups: Vec<_> = t
        .history
        .iter()
        .skip(1)
        .filter(|m| m.role == Role::User)
        .collect();
    if let Some(last) = followups.last() {
        text.push_str(&format!(
            "\n\n{MARK} {} wrote again on this task:\n\n{}",
            t.asker,
            last.text()
        ));
    }
    text.push_str("\n\n");
    text.push_str(&how_to_end(t));
    text
}

/// The session must stop working on a canceled task.
pub fn cancel_text(t: &Task) -> String {
    let why = t
        .status
        .message
        .as_ref()
        .map(|m| m.text())
        .filter(|s| !s.is_empty());
    format!(
        "{MARK} Task {} from {} was canceled{}. Stop working on it; no task_update is needed for it.",
        t.id,
        t.asker,
        why.map(|w| format!(" ({w})")).unwrap_or_default()
    )
}

fn first_chars(text: &str, n: usize) -> String {
    let mut out: String = text.chars().take(n).collect();
    if text.chars().count() > n {
        out.push('…');
    }
    out
}

/// A watchdog message: reminders for the due tasks (oldest first) and notes for the tasks
/// that just stalled. `seq` numbers the session's watchdog messages, so a repeat after a
/// crash is recognisable.
pub fn watchdog_text(seq: u64, remind: &[&Task], stalled: &[&Task]) -> String {
    let mut parts = Vec::new();
    if !remind.is_empty() {
        parts.push(format!(
            "{MARK} Reminder #{seq}: this session went quiet while it still holds {} open task{}. Carry on where you stopped, then end each one with `task_update`.",
            remind.len(),
            if remind.len() == 1 { "" } else { "s" }
        ));
        for t in remind {
            let mut item = format!(
                "- Task {} from {} (desk {}), reminder {}:\n  Request: {}",
                t.id,
                t.asker,
                t.desk,
                t.reminders_sent + 1,
                first_chars(&t.request_text(), 600)
            );
            if let Some(w) = &t.last_words {
                item.push_str(&format!("\n  Your last words: \"{}\"", first_chars(w, 400)));
            }
            item.push_str(&format!(
                "\n  End it: task_update(task_id \"{}\", status done|blocked|failed, text).",
                t.id
            ));
            parts.push(item);
        }
    }
    for t in stalled {
        parts.push(format!(
            "{MARK} Note #{seq}: task {} from {} is now marked stalled after the reminders went unanswered; the owner has been told. If you pick it up again, end it with task_update(task_id \"{}\", ...).",
            t.id, t.asker, t.id
        ));
    }
    parts.join("\n\n")
}

/// The note a session gets once when it starts.
pub fn session_note(desk: &Desk) -> String {
    format!(
        "{MARK} This session works at desk \"{name}\" ({dir}). Tasks from other agents arrive as messages \
         that start with \"{MARK} Task <id> from <asker>\". A task stays open until you end it: call the \
         `task_update` tool with its task_id and status \"done\" (with a summary), \"blocked\" (with what you \
         need) or \"failed\" (with why). If you stop without ending it, Taskkeeper will remind you.",
        name = desk.name,
        dir = desk.dir.display()
    )
}

/// A way of getting text into a session (DESIGN §7, claude-code.md §11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// The Stop hook of the turn that is ending continues it with the text.
    Handover,
    /// The session's asyncRewake waiter exits with the text and wakes it.
    Waiter,
    /// A user message on the stdin of a headless session Taskkeeper launched.
    Stdin,
    /// A bracketed paste and a separate Enter into the session's tmux pane.
    Paste,
    /// The desk's configured command, with the text on its stdin.
    Command,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Handover => "stop-hook handover",
            Self::Waiter => "waiter",
            Self::Stdin => "stdin",
            Self::Paste => "tmux paste",
            Self::Command => "command",
        }
    }

    /// Taskkeeper pushes the text itself (the others hand it to a hook that asked for it).
    pub fn is_push(self) -> bool {
        matches!(self, Self::Stdin | Self::Paste | Self::Command)
    }
}

/// What one session (or a desk with no live session) can be reached by right now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Means {
    /// Its Stop hook is running now (the turn is ending).
    pub at_stop: bool,
    /// A waiter of its is waiting.
    pub waiter: bool,
    /// Taskkeeper launched it and holds its stdin.
    pub stdin: bool,
    /// Its hooks reported a tmux pane.
    pub tmux_pane: bool,
    /// Its desk has a delivery command.
    pub command: bool,
}

/// The methods that can reach the session, best first; the one rule of which method is
/// tried and what the next one is when a delivery is not confirmed. A session Taskkeeper
/// launched is reached through its stdin only: nothing else knows it.
pub fn ranked(m: Means) -> Vec<Method> {
    if m.stdin {
        return vec![Method::Stdin];
    }
    [
        (m.at_stop, Method::Handover),
        (m.waiter, Method::Waiter),
        (m.tmux_pane, Method::Paste),
        (m.command, Method::Command),
    ]
    .into_iter()
    .filter_map(|(available, method)| available.then_some(method))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Timestamp;
    use crate::task::{Message, NewTask, TaskId};
    use crate::transition::{Event, apply};

    fn task() -> Task {
        let new = NewTask {
            desk: "web".parse().unwrap(),
            asker: "ci-bot".into(),
            request: Message::user_text("m-1", "Add a --json flag"),
            context_id: None,
            metadata: Default::default(),
        };
        Task::submit(TaskId::from("t-1"), new, 1, Timestamp::from_millis(0))
    }

    #[test]
    fn a_task_names_its_id_asker_and_ending() {
        let text = task_text(&task());
        assert!(
            text.starts_with("[Taskkeeper] Task t-1 from ci-bot (desk web):\n\nAdd a --json flag"),
            "{text}"
        );
        assert!(
            text.contains("task_update") && text.contains("\"t-1\""),
            "{text}"
        );
        assert!(!text.contains("wrote again"));
    }

    #[test]
    fn a_continued_task_carries_the_askers_latest_message() {
        let now = Timestamp::from_millis(5);
        let mut t = apply(&task(), Event::Start, now).unwrap();
        t = apply(
            &t,
            Event::WorkerBlocked {
                need: "Which format?".into(),
            },
            now,
        )
        .unwrap();
        t = apply(
            &t,
            Event::FollowUp {
                message: Message::user_text("m-2", "NDJSON"),
            },
            now,
        )
        .unwrap();
        let text = task_text(&t);
        assert!(
            text.contains("ci-bot wrote again on this task:\n\nNDJSON"),
            "{text}"
        );
        let canceled = apply(
            &t,
            Event::Cancel {
                reason: Some("not needed".into()),
            },
            now,
        )
        .unwrap();
        assert_eq!(
            cancel_text(&canceled),
            "[Taskkeeper] Task t-1 from ci-bot was canceled (not needed). Stop working on it; no task_update is needed for it."
        );
    }

    #[test]
    fn methods_are_ranked_as_the_design_says() {
        let all = Means {
            at_stop: true,
            waiter: true,
            stdin: false,
            tmux_pane: true,
            command: true,
        };
        assert_eq!(
            ranked(all),
            [
                Method::Handover,
                Method::Waiter,
                Method::Paste,
                Method::Command
            ]
        );
        let idle_in_tmux = Means {
            at_stop: false,
            waiter: false,
            ..all
        };
        assert_eq!(ranked(idle_in_tmux), [Method::Paste, Method::Command]);
        assert_eq!(ranked(Means { stdin: true, ..all }), [Method::Stdin]);
        assert_eq!(ranked(Means::default()), []);
        assert!(ranked(idle_in_tmux).iter().all(|m| m.is_push()));
    }
}
