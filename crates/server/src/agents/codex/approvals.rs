//! What a headless Codex session asks the owner, and how the answer goes back.
//!
//! Under `approvalPolicy: "untrusted"` Codex asks before any command it does not know to be
//! read-only (`item/commandExecution/requestApproval`) and before a file change it makes
//! (`item/fileChange/requestApproval`), each a JSON-RPC request to the client that waits for
//! its answer (Codex 0.171.0, docs/agents.md). Each becomes the owner's question
//! ([`crate::agents::launch::Ask`]); the owner's choice is answered `accept` or `decline` (a
//! declined command does not run, and the model reads that the user rejected it). Codex's
//! answer has no room for the owner's message, so a denial's message goes into the running
//! turn just before it ([`steer`], a `turn/steer`), and the model reads both in its next
//! request.

use std::collections::HashMap;

use serde_json::{Value, json};

/// What leads the owner's message with a denial, in the turn.
pub(super) const OWNER_SAID: &str = "«Taskkeeper» The owner did not allow it:";

/// An approval request of Codex's as the owner sees it: the tool, what it is in a line
/// (Codex's reason when it gives one, else the command or the files it changes) and its
/// input; `None` for any other request. `changes` holds the changes of each file change
/// item under way, by item id.
pub(super) fn asked(
    method: &str,
    params: &Value,
    changes: &HashMap<String, Value>,
) -> Option<(&'static str, Option<String>, Value)> {
    let reason = params
        .get("reason")
        .and_then(Value::as_str)
        .filter(|r| !r.trim().is_empty())
        .map(str::to_owned);
    match method {
        "item/commandExecution/requestApproval" => {
            let input = json!({"command": params.get("command"), "cwd": params.get("cwd")});
            let command = params
                .get("command")
                .and_then(Value::as_str)
                .map(str::to_owned);
            Some(("command", reason.or(command), input))
        }
        "item/fileChange/requestApproval" => {
            let item = params.get("itemId").and_then(Value::as_str).unwrap_or("");
            let changes = changes.get(item);
            let paths: Vec<&str> = changes
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| c.get("path").and_then(Value::as_str))
                .collect();
            let input = json!({"changes": changes, "grantRoot": params.get("grantRoot")});
            let files = (!paths.is_empty()).then(|| paths.join(", "));
            Some(("file change", reason.or(files), input))
        }
        _ => None,
    }
}

/// The `turn/steer` parameters that put the owner's `message` into the running turn.
pub(super) fn steer(thread: &str, turn: &str, message: &str) -> Value {
    json!({"threadId": thread, "expectedTurnId": turn,
           "input": [{"type": "text", "text": format!("{OWNER_SAID} {message}")}]})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_requests_are_not_approvals_and_an_empty_reason_is_none() {
        let none = HashMap::new();
        assert_eq!(asked("item/tool/requestUserInput", &json!({}), &none), None);
        let (tool, line, _) = asked(
            "item/commandExecution/requestApproval",
            &json!({"command": "make", "reason": " "}),
            &none,
        )
        .unwrap();
        assert_eq!((tool, line.as_deref()), ("command", Some("make")));
        let (tool, line, _) = asked("item/fileChange/requestApproval", &json!({}), &none).unwrap();
        assert_eq!((tool, line), ("file change", None));
    }
}
