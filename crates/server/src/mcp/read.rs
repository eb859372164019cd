//! What the model reads: a task rendered as text for the session, and the same as
//! `structuredContent` JSON, with the next step to take where there is one.
//!
//! The asker's words reach the model here as they do in a handover: [`delivery::quoted`]
//! (a begin and an end line naming the asker, every line behind `> `, the mark defused,
//! no control character), in the text and in the JSON alike, since Claude Code shows the
//! model the structured content. A worker's words (which may echo an asker's) are
//! [`delivery::unmarked`]. So no tool that reads a task lets an asker's line pass for
//! Taskkeeper's or the owner's.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;
use taskkeeper_core::delivery;
use taskkeeper_core::{Message, Role, Task, Timestamp};

// ---- rendering --------------------------------------------------------------------------

/// Who reads a rendered task: the worker gets the way to end it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Audience {
    Worker,
    Asker,
}

#[derive(Serialize)]
struct MessageOut {
    /// `asker` or `worker`.
    from: &'static str,
    text: String,
}

#[derive(Serialize)]
struct TaskOut {
    id: String,
    state: &'static str,
    desk: String,
    asker: String,
    /// The asker's request, [`delivery::quoted`].
    request: String,
    status_text: Option<String>,
    queue_position: Option<u32>,
    stalled: bool,
    acknowledged: bool,
    created_at: Timestamp,
    updated_at: Timestamp,
    /// The messages after the request: follow-ups from the asker (quoted), the worker's
    /// words.
    messages: Vec<MessageOut>,
    /// The result artifact's text, once the task is done.
    result: Option<String>,
    /// What the reader can do next. Claude Code shows the model a result's structured
    /// content rather than its text, so the guidance the text gives is here too.
    #[serde(skip_serializing_if = "Option::is_none")]
    next: Option<String>,
}

fn message_out(t: &Task, m: &Message) -> MessageOut {
    match m.role {
        Role::User => MessageOut {
            from: "asker",
            text: delivery::quoted(t, "message", &m.text()),
        },
        Role::Agent => MessageOut {
            from: "worker",
            text: delivery::unmarked(&m.text()),
        },
    }
}

fn task_out(t: &Task, audience: Option<Audience>) -> TaskOut {
    let result = t
        .artifacts
        .iter()
        .find(|a| a.artifact_id == "result")
        .map(|a| {
            a.parts
                .iter()
                .filter_map(|p| match &p.content {
                    taskkeeper_core::task::PartContent::Text(s) => Some(s.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n\n")
        })
        .map(|r| delivery::unmarked(&r));
    TaskOut {
        id: t.id.to_string(),
        state: t.state().as_str(),
        desk: t.desk.to_string(),
        asker: t.asker.clone(),
        request: delivery::quoted(t, "request", &t.request_text()),
        status_text: t
            .status
            .message
            .as_ref()
            .map(|m| delivery::unmarked(&m.text())),
        queue_position: t.queue_position,
        stalled: t.stalled_at.is_some(),
        acknowledged: t.acknowledged_at.is_some(),
        created_at: t.created_at,
        updated_at: t.updated_at,
        messages: t
            .history
            .iter()
            .skip(1)
            .map(|m| message_out(t, m))
            .collect(),
        result,
        next: audience.and_then(|a| next_step(t, a)),
    }
}

fn next_step(t: &Task, audience: Audience) -> Option<String> {
    match audience {
        Audience::Worker if t.is_open() => Some(format!(
            "When the work is finished or stuck, end it with task_update(task_id: \"{}\", \
             status: \"done\" | \"blocked\" | \"failed\", text: …).",
            t.id
        )),
        Audience::Asker if t.is_open() => Some(format!(
            "The desk works on it; task_status(task_id: \"{}\") shows how it ends.",
            t.id
        )),
        Audience::Asker if t.acknowledged_at.is_none() => Some(format!(
            "It has ended; task_ack(task_id: \"{}\") acknowledges that you read it.",
            t.id
        )),
        _ => None,
    }
}

pub(super) fn task_json(t: &Task, audience: Option<Audience>) -> Value {
    serde_json::to_value(task_out(t, audience)).unwrap_or(Value::Null)
}

pub(super) fn queue_words(t: &Task) -> String {
    match t.queue_position {
        Some(p) => format!("queued, position {p}"),
        None => t.state().as_str().to_owned(),
    }
}

/// One item of a list: the task's line, then the first line of its request, quoted and
/// indented under it.
pub(super) fn task_line(t: &Task) -> String {
    let request = t.request_text();
    let first = request.lines().next().unwrap_or("");
    let mut short: String = first.chars().take(160).collect();
    if short.len() < request.trim_end().len() {
        short.push('…');
    }
    let stalled = if t.stalled_at.is_some() {
        ", stalled"
    } else {
        ""
    };
    let quoted = delivery::quoted(t, "request", &short).replace('\n', "\n  ");
    format!(
        "{} — {}{stalled} — desk {}, from {}:\n  {quoted}",
        t.id,
        queue_words(t),
        t.desk,
        t.asker
    )
}

pub(super) fn render_task(t: &Task, audience: Audience) -> String {
    let o = task_out(t, Some(audience));
    let mut s = format!(
        "Task {} — {} — desk {}, asked by {}\n",
        o.id,
        queue_words(t),
        o.desk,
        o.asker
    );
    if o.stalled {
        s.push_str("Stalled: the owner was told; it holds the desk no longer.\n");
    }
    let _ = write!(s, "\nRequest:\n{}\n", o.request.trim_end());
    for m in &o.messages {
        // The worker's last words are the status below; no need to say them twice.
        if m.from == "worker" && o.status_text.as_deref() == Some(m.text.as_str()) {
            continue;
        }
        let _ = write!(s, "\nFrom the {}:\n{}\n", m.from, m.text.trim_end());
    }
    if let Some(status) = &o.status_text {
        let _ = write!(s, "\nStatus ({}):\n{}\n", o.state, status.trim_end());
    }
    if let Some(next) = &o.next {
        let _ = write!(s, "\n{next}\n");
    }
    s
}
