//! A2A wire shapes, built from the core's [`Task`]: v1.0 JSON (ProtoJSON names, camelCase,
//! parts told apart by member name) and the v0.3 dialect translated from it (`kind` on every
//! object, lower-case kebab states, `file` parts, `final` on status events).
//!
//! Taskkeeper's own marks travel in `metadata[EXT]`, keyed by the extension's URI (A2A §4.6.2).

use serde_json::{Map, Value, json};
use taskkeeper_core::{ArtifactChange, Task, TaskState};

/// The extension's URI: stable, versioned; a breaking change gets a new one.
pub const EXTENSION_URI: &str = "https://taskkeeper.dev/a2a/extensions/open-until-done/v1";

/// The ErrorInfo domain of Taskkeeper's own error reasons (its limits).
pub const ERROR_DOMAIN: &str = "taskkeeper.dev";

/// The protocol dialect of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    V1,
    V03,
}

/// Taskkeeper's metadata for a task, under [`EXTENSION_URI`].
pub fn extension_metadata(t: &Task) -> Value {
    let mut m = Map::new();
    m.insert("desk".into(), json!(t.desk.as_str()));
    m.insert("asker".into(), json!(t.asker));
    if let Some(p) = t.queue_position {
        m.insert("queuePosition".into(), json!(p));
    }
    m.insert("reminders".into(), json!(t.reminders_sent));
    if let Some(at) = t.last_reminder_at {
        m.insert("lastReminderAt".into(), json!(at));
    }
    m.insert("stalled".into(), json!(t.stalled_at.is_some()));
    if let Some(at) = t.stalled_at {
        m.insert("stalledAt".into(), json!(at));
    }
    m.insert("expired".into(), json!(t.expired_at.is_some()));
    if let Some(at) = t.expired_at {
        m.insert("expiredAt".into(), json!(at));
    }
    if let Some(at) = t.acknowledged_at {
        m.insert("acknowledgedAt".into(), json!(at));
    }
    m.insert("waitingOnOwner".into(), json!(t.waiting_on_owner));
    if let Some(at) = t.delivered_at {
        m.insert("deliveredAt".into(), json!(at));
    }
    if let Some(w) = &t.last_words {
        m.insert("lastWords".into(), json!(w));
    }
    Value::Object(m)
}

fn metadata(t: &Task) -> Value {
    let mut m = t.metadata.clone();
    m.insert(EXTENSION_URI.to_owned(), extension_metadata(t));
    Value::Object(m)
}

/// How much of a task to show.
#[derive(Debug, Clone, Copy, Default)]
pub struct Shape {
    /// `None`: all; `Some(0)`: no history field; `Some(n)`: the n most recent messages.
    pub history_length: Option<u32>,
    pub include_artifacts: bool,
}

impl Shape {
    pub const FULL: Shape = Shape {
        history_length: None,
        include_artifacts: true,
    };
}

/// A v1.0 Task.
pub fn task_v1(t: &Task, shape: Shape) -> Value {
    let mut obj = Map::new();
    obj.insert("id".into(), json!(t.id));
    obj.insert("contextId".into(), json!(t.context_id));
    obj.insert("status".into(), json!(t.status));
    if shape.include_artifacts && !t.artifacts.is_empty() {
        obj.insert("artifacts".into(), json!(t.artifacts));
    }
    let history: &[_] = match shape.history_length {
        None => &t.history,
        Some(n) => &t.history[t.history.len().saturating_sub(n as usize)..],
    };
    if !history.is_empty() {
        obj.insert("history".into(), json!(history));
    }
    obj.insert("metadata".into(), metadata(t));
    Value::Object(obj)
}

/// A v1.0 TaskStatusUpdateEvent.
pub fn status_update_v1(t: &Task) -> Value {
    json!({"taskId": t.id, "contextId": t.context_id, "status": t.status, "metadata": metadata(t)})
}

/// A v1.0 TaskArtifactUpdateEvent: a whole artifact, or a chunk of one
/// ([`taskkeeper_core::task::artifact_changes`]).
pub fn artifact_update_v1(t: &Task, change: &ArtifactChange) -> Value {
    json!({"taskId": t.id, "contextId": t.context_id, "artifact": change.artifact,
           "append": change.append, "lastChunk": change.last_chunk})
}

/// A stream item or result in the request's dialect. `item` is a v1.0 StreamResponse member
/// name (`task`, `statusUpdate`, `artifactUpdate`) and its v1.0 value.
pub fn stream_item(dialect: Dialect, item: &str, v1: Value, is_final: bool) -> Value {
    match dialect {
        Dialect::V1 => json!({ item: v1 }),
        Dialect::V03 => {
            let mut v = v03::from_v1(v1);
            if let Value::Object(o) = &mut v {
                let kind = match item {
                    "task" => "task",
                    "statusUpdate" => "status-update",
                    _ => "artifact-update",
                };
                o.insert("kind".into(), json!(kind));
                if item == "statusUpdate" {
                    o.insert("final".into(), json!(is_final));
                }
            }
            v
        }
    }
}

/// A bare Task result (GetTask, CancelTask, AckTask) in the request's dialect.
pub fn task_result(dialect: Dialect, t: &Task, shape: Shape) -> Value {
    match dialect {
        Dialect::V1 => task_v1(t, shape),
        Dialect::V03 => stream_item(Dialect::V03, "task", task_v1(t, shape), false),
    }
}

pub fn state_v03(s: TaskState) -> &'static str {
    // The owner API's names are v0.3's.
    s.as_str()
}

/// v0.3 ⇄ v1.0 translation of JSON values.
pub mod v03 {
    use serde_json::{Map, Value, json};
    use taskkeeper_core::TaskState;

    fn state_from_v1(s: &str) -> Option<&'static str> {
        let state: TaskState = serde_json::from_value(Value::String(s.to_owned())).ok()?;
        Some(super::state_v03(state))
    }

    /// Rewrite a v1.0 value (task, message, event, artifact) into v0.3 form.
    pub fn from_v1(v: Value) -> Value {
        match v {
            Value::Object(o) => Value::Object(object_from_v1(o)),
            Value::Array(a) => Value::Array(a.into_iter().map(from_v1).collect()),
            other => other,
        }
    }

    fn object_from_v1(o: Map<String, Value>) -> Map<String, Value> {
        let is_message = o.contains_key("messageId") && o.contains_key("role");
        let is_part = !is_message
            && ["text", "raw", "url", "data"]
                .iter()
                .filter(|k| o.contains_key(**k))
                .count()
                == 1
            && !o.contains_key("artifactId");
        if is_part {
            return part_from_v1(o);
        }
        let mut out = Map::new();
        if is_message {
            out.insert("kind".into(), json!("message"));
        }
        for (k, v) in o {
            let v = match (k.as_str(), v) {
                ("state", Value::String(s)) => json!(state_from_v1(&s).unwrap_or("unknown")),
                ("role", Value::String(r)) => {
                    json!(if r == "ROLE_AGENT" { "agent" } else { "user" })
                }
                // Metadata is the asker's and ours, never translated.
                ("metadata", v) => v,
                (_, v) => from_v1(v),
            };
            out.insert(k, v);
        }
        out
    }

    fn part_from_v1(mut o: Map<String, Value>) -> Map<String, Value> {
        let mut out = Map::new();
        if let Some(m) = o.remove("metadata") {
            out.insert("metadata".into(), m);
        }
        let name = o.remove("filename");
        let mime = o.remove("mediaType");
        if let Some(t) = o.remove("text") {
            out.insert("kind".into(), json!("text"));
            out.insert("text".into(), t);
        } else if let Some(d) = o.remove("data") {
            out.insert("kind".into(), json!("data"));
            out.insert("data".into(), d);
        } else {
            let mut file = Map::new();
            if let Some(b) = o.remove("raw") {
                file.insert("bytes".into(), b);
            }
            if let Some(u) = o.remove("url") {
                file.insert("uri".into(), u);
            }
            if let Some(m) = mime {
                file.insert("mimeType".into(), m);
            }
            if let Some(n) = name {
                file.insert("name".into(), n);
            }
            out.insert("kind".into(), json!("file"));
            out.insert("file".into(), Value::Object(file));
        }
        out
    }

    /// Rewrite a v0.3 Message into v1.0 form, or say which field is wrong.
    pub fn message_to_v1(v: Value) -> Result<Value, String> {
        let Value::Object(mut o) = v else {
            return Err("message must be an object".into());
        };
        o.remove("kind");
        match o.get("role").and_then(Value::as_str) {
            Some("user") => o.insert("role".into(), json!("ROLE_USER")),
            Some("agent") => o.insert("role".into(), json!("ROLE_AGENT")),
            _ => return Err("message.role must be \"user\" or \"agent\"".into()),
        };
        let parts = match o.remove("parts") {
            Some(Value::Array(parts)) => parts,
            _ => return Err("message.parts must be an array".into()),
        };
        let parts: Result<Vec<Value>, String> = parts.into_iter().map(part_to_v1).collect();
        o.insert("parts".into(), Value::Array(parts?));
        Ok(Value::Object(o))
    }

    fn part_to_v1(p: Value) -> Result<Value, String> {
        let Value::Object(mut o) = p else {
            return Err("message.parts[] must be objects".into());
        };
        let mut out = Map::new();
        if let Some(m) = o.remove("metadata") {
            out.insert("metadata".into(), m);
        }
        match o.get("kind").and_then(Value::as_str) {
            Some("text") => {
                out.insert(
                    "text".into(),
                    o.remove("text").ok_or("a text part needs `text`")?,
                );
            }
            Some("data") => {
                out.insert(
                    "data".into(),
                    o.remove("data").ok_or("a data part needs `data`")?,
                );
            }
            Some("file") => {
                let Some(Value::Object(mut f)) = o.remove("file") else {
                    return Err("a file part needs `file`".into());
                };
                if let Some(b) = f.remove("bytes") {
                    out.insert("raw".into(), b);
                } else if let Some(u) = f.remove("uri") {
                    out.insert("url".into(), u);
                } else {
                    return Err("a file part needs `file.bytes` or `file.uri`".into());
                }
                if let Some(m) = f.remove("mimeType") {
                    out.insert("mediaType".into(), m);
                }
                if let Some(n) = f.remove("name") {
                    out.insert("filename".into(), n);
                }
            }
            _ => return Err("message.parts[].kind must be \"text\", \"file\" or \"data\"".into()),
        }
        Ok(Value::Object(out))
    }
}
