//! What a launched JSON-RPC agent (Codex's app server, Gemini's ACP) asks the owner, one
//! request at a time.
//!
//! Such an agent can ask several things at once (tool calls run in parallel), and each waits
//! for its own answer; the owner sees, and answers, one question per session
//! ([`crate::agents::launched::Launched`] holds one). So the others wait here in
//! order, each asked when the one before is settled: answered by the owner, or settled by the
//! agent itself (Codex's `serverRequest/resolved`). When the turn ends, whatever was asked is
//! moot.

use std::collections::VecDeque;

use serde_json::Value;

use crate::agents::launch::Ask;
use crate::agents::permission::Permission;

/// The owner's questions from one session: the one asked now, and those waiting for it.
#[derive(Debug, Default)]
pub(crate) struct Questions {
    /// The request asked of the owner now, and the JSON-RPC id of the agent's request.
    current: Option<(String, Value)>,
    queued: VecDeque<(Value, Permission)>,
}

impl Questions {
    /// The agent asks (its request's JSON-RPC id, and what the owner is shown): asked now
    /// when nothing else waits on the owner, else after what does.
    pub(crate) fn ask(&mut self, rpc_id: Value, permission: Permission) -> Option<Ask> {
        if self.current.is_some() {
            self.queued.push_back((rpc_id, permission));
            return None;
        }
        self.current = Some((permission.request_id.clone(), rpc_id));
        Some(Ask::Permission(permission))
    }

    /// Request `request_id` is settled, answered or not: the next one is asked, or, when
    /// none waits, the owner is asked nothing more (a no-op when the owner answered it).
    pub(crate) fn settled(&mut self, request_id: &str) -> Option<Ask> {
        if self
            .current
            .as_ref()
            .is_some_and(|(id, _)| id == request_id)
        {
            self.current = None;
            return match self.queued.pop_front() {
                Some((rpc_id, next)) => self.ask(rpc_id, next),
                None => Some(Ask::Withdrawn(request_id.to_owned())),
            };
        }
        self.queued.retain(|(_, p)| p.request_id != request_id);
        None
    }

    /// The turn is over: nothing it asked waits any more.
    pub(crate) fn moot(&mut self) -> Option<Ask> {
        self.queued.clear();
        self.current
            .take()
            .map(|(request_id, _)| Ask::Withdrawn(request_id))
    }

    /// The JSON-RPC ids of the agent's requests not settled yet, in the order asked.
    pub(crate) fn pending(&self) -> Vec<Value> {
        self.current
            .iter()
            .map(|(_, rpc_id)| rpc_id.clone())
            .chain(self.queued.iter().map(|(rpc_id, _)| rpc_id.clone()))
            .collect()
    }
}

/// A JSON-RPC id as the text a request is known by ("7", or the string itself).
pub(crate) fn id_text(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn asked(id: &str) -> Permission {
        Permission::rpc(
            id.into(),
            "command".into(),
            None,
            &json!({}),
            format!("allow {id}"),
            format!("deny {id}"),
        )
    }

    fn is_asked(ask: Option<Ask>, id: &str) -> bool {
        matches!(ask, Some(Ask::Permission(p)) if p.request_id == id)
    }

    #[test]
    fn a_second_request_waits_until_the_first_is_settled() {
        let mut q = Questions::default();
        assert!(is_asked(q.ask(json!(1), asked("1")), "1"));
        assert_eq!(q.ask(json!(2), asked("2")), None, "waits behind the first");
        assert_eq!(q.pending(), [json!(1), json!(2)]);
        assert_eq!(q.settled("9"), None, "not one of ours");
        assert!(is_asked(q.settled("1"), "2"));
        assert_eq!(q.pending(), [json!(2)]);
        assert_eq!(q.settled("2"), Some(Ask::Withdrawn("2".into())));
        assert!(q.pending().is_empty());
    }

    #[test]
    fn a_queued_request_given_up_is_never_asked_and_a_turns_end_withdraws_the_current() {
        let mut q = Questions::default();
        q.ask(json!(1), asked("1"));
        q.ask(json!(2), asked("2"));
        q.ask(json!(3), asked("3"));
        assert_eq!(q.settled("2"), None);
        assert!(is_asked(q.settled("1"), "3"));
        assert_eq!(q.moot(), Some(Ask::Withdrawn("3".into())));
        assert_eq!(q.moot(), None);
        assert_eq!(id_text(&json!(7)), "7");
        assert_eq!(id_text(&json!("r-7")), "r-7");
    }
}
