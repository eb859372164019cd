//! Who asked a task, and who may read it: the one answer every surface gives (A2A's GetTask,
//! ListTasks and SubscribeToTask, the file route, MCP's reads, the owner API).
//!
//! - The **owner** reads every task, on every surface: its API shows them all, so limiting
//!   its A2A reads or its file fetches would protect nothing and give two answers. It may
//!   fetch the files of any task's artifacts (the owner API has no file route of its own).
//! - An **asker** reads only the tasks it asked ([`asked`]); another asker's task is, to it,
//!   a task that does not exist. A desk asking through MCP's `task_send` is the asker
//!   `desk:NAME`.
//! - A **session** reads the tasks of its own desk, except one handed to another session
//!   ([`Task::delivered_to`]): that one is the other session's to work on and to end
//!   ([`crate::queue::session_may_end`]). A queued task, one handed back, and one a desk's
//!   command took (no session named) are the desk's, so any of its sessions reads them.
//!
//! Acting on a task as its asker (a follow-up, cancel, acknowledge, webhooks) is for the asker
//! that [`asked`] it, the owner over A2A included: there it is the asker [`OWNER`], and its
//! own API acts on any task.

use crate::session::Session;
use crate::task::Task;

/// The asker name the owner's own tasks carry; no registered asker may take it.
pub const OWNER: &str = "owner";

/// Who reads a task.
#[derive(Debug, Clone, Copy)]
pub enum Reader<'a> {
    /// The owner (its token, on any surface).
    Owner,
    /// An asker, by the name its tasks carry.
    Asker(&'a str),
    /// A worker session, as it proved to be.
    Session(&'a Session),
}

/// Whether `reader` may read `task` (see the module's doc). Everything that shows a task to
/// someone asks this; a task it may not read is answered as one that does not exist, or
/// refused, in the surface's own words.
pub fn may_read(reader: Reader<'_>, task: &Task) -> bool {
    match reader {
        Reader::Owner => true,
        Reader::Asker(name) => asked(name, task),
        Reader::Session(s) => {
            s.desk == task.desk && task.delivered_to.as_ref().is_none_or(|to| *to == s.id)
        }
    }
}

/// Whether the asker called `name` asked `task`: the one that may act on it as its asker.
pub fn asked(name: &str, task: &Task) -> bool {
    task.asker == name
}

/// Which asker's tasks a list for `reader` holds, as a store filter: `None` for all of them
/// (the owner); a session's list is its desk's, filtered by [`may_read`].
pub fn listed_asker<'a>(reader: Reader<'a>) -> Option<&'a str> {
    match reader {
        Reader::Owner | Reader::Session(_) => None,
        Reader::Asker(name) => Some(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Timestamp;
    use crate::desk::{AgentKind, DeskName};
    use crate::session::SessionId;
    use crate::task::{Message, NewTask, TaskId};

    fn task(desk: &str, asker: &str, to: Option<&str>) -> Task {
        let new = NewTask {
            desk: desk.parse::<DeskName>().unwrap(),
            asker: asker.to_owned(),
            request: Message::user_text("m-1", "Add a --json flag"),
            context_id: None,
            metadata: serde_json::Map::new(),
        };
        let mut t = Task::submit(TaskId::from("t-1"), new, 1, Timestamp::from_millis(1));
        t.delivered_to = to.map(SessionId::from);
        t
    }

    fn session(id: &str, desk: &str) -> Session {
        Session::new(
            SessionId::from(id),
            desk.parse::<DeskName>().unwrap(),
            AgentKind::ClaudeCode,
            std::path::PathBuf::from("/src/web"),
            Timestamp::from_millis(1),
        )
    }

    #[test]
    fn the_owner_the_asker_and_the_desks_sessions_read_and_nobody_else() {
        let (a, b, other) = (
            session("a", "web"),
            session("b", "web"),
            session("c", "api"),
        );
        let handed_to_a = task("web", "alice", Some("a"));
        let queued = task("web", "alice", None);
        let mut by_command = task("web", "alice", None);
        by_command.delivered_at = Some(Timestamp::from_millis(2));
        for (reader, t, reads) in [
            (Reader::Owner, &handed_to_a, true),
            (Reader::Asker("alice"), &handed_to_a, true),
            (Reader::Asker("bob"), &handed_to_a, false),
            (Reader::Asker(OWNER), &handed_to_a, false),
            (Reader::Session(&a), &handed_to_a, true),
            (Reader::Session(&b), &handed_to_a, false),
            (Reader::Session(&other), &handed_to_a, false),
            (Reader::Session(&b), &queued, true),
            (Reader::Session(&other), &queued, false),
            (Reader::Session(&b), &by_command, true),
        ] {
            assert_eq!(may_read(reader, t), reads, "{reader:?} reading {t:?}");
        }
        assert_eq!(listed_asker(Reader::Owner), None);
        assert_eq!(listed_asker(Reader::Asker("alice")), Some("alice"));
    }
}
