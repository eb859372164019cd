//! What a launched session asks the owner: a tool to allow ([`Permission`]), as every
//! headless kind asks it, and the line that carries the owner's answer back in the
//! session's own protocol. Here, below the runner and the kinds alike, because both name it:
//! a kind's protocol reads a request into one, the runner holds it until the owner answers.

use serde_json::{Value, json};

/// A tool a launched session asks the owner to allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permission {
    /// The session's id for the request; the answer names it.
    pub request_id: String,
    pub tool: String,
    pub description: Option<String>,
    /// The tool's input as JSON text (cut to [`INPUT_SHOWN`] characters).
    pub input: String,
    /// How the owner's answer goes back, in the session's protocol.
    reply: Reply,
}

/// How the owner's answer to a [`Permission`] is written on the session's stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reply {
    /// Claude Code's control response: an allowance repeats the input as asked
    /// (`updatedInput`), a denial carries the owner's message to the model.
    Control { full_input: Value },
    /// A JSON-RPC answer already written for each choice (Codex's app server, Gemini's
    /// ACP): their answers name a decision and carry no message.
    Rpc { allow: String, deny: String },
}

/// How much of a tool's input a permission request shows.
pub const INPUT_SHOWN: usize = 2000;

/// `input` as JSON text, cut to [`INPUT_SHOWN`] characters.
fn shown(input: &Value) -> String {
    let text = input.to_string();
    if text.chars().count() > INPUT_SHOWN {
        let mut cut: String = text.chars().take(INPUT_SHOWN).collect();
        cut.push('…');
        cut
    } else {
        text
    }
}

impl Permission {
    /// A request a JSON-RPC agent made (Codex's approvals, Gemini's
    /// `session/request_permission`), answered by `allow` or `deny`: whole answer lines in
    /// its protocol, the request's id in them.
    pub(crate) fn rpc(
        request_id: String,
        tool: String,
        description: Option<String>,
        input: &Value,
        allow: String,
        deny: String,
    ) -> Self {
        Self {
            request_id,
            tool,
            description,
            input: shown(input),
            reply: Reply::Rpc { allow, deny },
        }
    }

    /// A request a headless Claude Code session made (a `can_use_tool` control request,
    /// read in `claude_code::headless`), answered by a control response that repeats
    /// `full_input` when allowed and carries the owner's message when denied.
    pub(crate) fn control(
        request_id: String,
        tool: String,
        description: Option<String>,
        full_input: Value,
    ) -> Self {
        Self {
            request_id,
            tool,
            description,
            input: shown(&full_input),
            reply: Reply::Control { full_input },
        }
    }

    /// The line that answers it on the session's stdin. `message` goes with a denial where
    /// the protocol carries one (Claude Code's).
    pub(crate) fn answer(&self, allow: bool, message: Option<&str>) -> String {
        match &self.reply {
            Reply::Control { full_input } => {
                let response = if allow {
                    json!({"behavior": "allow", "updatedInput": full_input})
                } else {
                    json!({"behavior": "deny",
                           "message": message.filter(|m| !m.trim().is_empty()).unwrap_or("The owner did not allow this.")})
                };
                control_response(&self.request_id, response)
            }
            Reply::Rpc {
                allow: yes,
                deny: no,
            } => {
                let mut line = if allow { yes.clone() } else { no.clone() };
                if !line.ends_with('\n') {
                    line.push('\n');
                }
                line
            }
        }
    }
}

/// A successful answer to a control request, as one line.
fn control_response(request_id: &str, response: Value) -> String {
    let mut line = json!({"type": "control_response", "response": {
        "subtype": "success", "request_id": request_id, "response": response}})
    .to_string();
    line.push('\n');
    line
}
