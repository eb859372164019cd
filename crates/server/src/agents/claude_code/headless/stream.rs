//! What a headless Claude Code session's stream-json says, and what Taskkeeper writes back:
//! [`StreamEdges`] turns its events into [`Edge`]s (pure, tested on a recorded stream), a
//! [`Permission`] request read from its control lines (its answer is written as the request
//! says, `agents::permission`), a task as one user message.

use serde_json::{Value, json};
use taskkeeper_core::Timestamp;

use crate::agents::launch::{Ask, Headless, Step};
use crate::agents::permission::Permission;
use taskkeeper_core::session::{Edge, TurnOrigin};

/// The permission request in a `can_use_tool` control request, if it is one.
fn permission_of(event: &Value) -> Option<Permission> {
    let request = event.get("request")?;
    if request.get("subtype")?.as_str()? != "can_use_tool" {
        return None;
    }
    Some(Permission::control(
        event.get("request_id")?.as_str()?.to_owned(),
        request.get("tool_name")?.as_str()?.to_owned(),
        request
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned),
        request.get("input").cloned().unwrap_or_else(|| json!({})),
    ))
}

/// An answer refusing a control request Taskkeeper does not handle, as one line.
pub(super) fn control_error(request_id: &str, error: &str) -> String {
    let mut line = json!({"type": "control_response", "response": {
        "subtype": "error", "request_id": request_id, "error": error}})
    .to_string();
    line.push('\n');
    line
}

/// One user message in stream-json.
pub(super) fn user_message(text: &str) -> String {
    let mut line =
        json!({"type": "user", "message": {"role": "user", "content": text}}).to_string();
    line.push('\n');
    line
}

/// Translates a headless Claude Code session's stream-json events into edges. Turns are
/// bracketed by `session_state_changed` (`running` … `idle`), the authoritative signal; the
/// `result` before `idle` carries the last words or the error; `background_tasks_changed`
/// replaces the set of running background commands. The state events are switched on by an
/// environment variable the docs do not name: should a release stop sending them, each turn's
/// `init` and `result` bracket it instead (a little later at the end, after background agents
/// of the turn rather than with them).
#[derive(Debug, Default)]
pub struct StreamEdges {
    background: Vec<String>,
    last_words: Option<String>,
    failed: bool,
    rate_limited_until: Option<Timestamp>,
    /// The session sends `session_state_changed` (the first comes before the first `init`).
    has_state_events: bool,
    /// It waits on the owner: the next `running` resumes the turn, it starts none.
    waiting: bool,
}

impl StreamEdges {
    /// The edges one event makes; `expected` says whether Taskkeeper wrote the message that
    /// starts a turn (asked only when one starts).
    pub fn edges(&mut self, event: &Value, expected: impl FnOnce() -> bool) -> Vec<Edge> {
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        let subtype = event.get("subtype").and_then(Value::as_str).unwrap_or("");
        match (kind, subtype) {
            ("system", "session_state_changed") => {
                self.has_state_events = true;
                let state = event.get("state").and_then(Value::as_str);
                let was_waiting =
                    std::mem::replace(&mut self.waiting, state == Some("requires_action"));
                match state {
                    Some("running") if was_waiting => vec![Edge::ToolActivity],
                    Some("running") => self.turn_started(expected),
                    Some("requires_action") => vec![Edge::WaitingOnOwner],
                    Some("idle") => self.turn_ended(),
                    _ => vec![],
                }
            }
            ("system", "init") if !self.has_state_events => self.turn_started(expected),
            ("system", "background_tasks_changed") => {
                self.background = event
                    .get("tasks")
                    .and_then(Value::as_array)
                    .map(|tasks| {
                        tasks
                            .iter()
                            .filter_map(|t| t.get("task_id").and_then(Value::as_str))
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                vec![]
            }
            ("system", "task_started") => match event.get("task_id").and_then(Value::as_str) {
                Some(id) => {
                    if !self.background.iter().any(|b| b == id) {
                        self.background.push(id.to_owned());
                    }
                    vec![Edge::BackgroundStarted { id: id.to_owned() }]
                }
                None => vec![],
            },
            ("result", _) => {
                self.failed = event.get("is_error").and_then(Value::as_bool) == Some(true);
                if !self.failed {
                    self.last_words = event
                        .get("result")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                }
                if self.has_state_events {
                    vec![]
                } else {
                    self.turn_ended()
                }
            }
            ("rate_limit_event", _) | ("system", "rate_limit_event") => {
                let info = event.get("rate_limit_info").unwrap_or(event);
                let limited = info
                    .get("status")
                    .and_then(Value::as_str)
                    .is_some_and(|s| s != "allowed" && s != "allowed_warning");
                let resets = info.get("resetsAt").and_then(Value::as_i64);
                if limited && let Some(at) = resets {
                    // Seconds since the epoch (milliseconds when it is that large).
                    let ms = if at > 100_000_000_000 { at } else { at * 1000 };
                    self.rate_limited_until = Some(Timestamp::from_millis(ms));
                }
                vec![]
            }
            _ => vec![],
        }
    }

    fn turn_started(&mut self, expected: impl FnOnce() -> bool) -> Vec<Edge> {
        let origin = if expected() {
            TurnOrigin::Taskkeeper
        } else {
            // Nobody but Taskkeeper writes to its stdin: a turn it did not start was started
            // by a finished background command.
            TurnOrigin::Background
        };
        self.failed = false;
        self.last_words = None;
        vec![Edge::TurnStarted { origin }]
    }

    fn turn_ended(&mut self) -> Vec<Edge> {
        if self.failed {
            vec![Edge::TurnFailed {
                rate_limited_until: self.rate_limited_until.take(),
            }]
        } else {
            vec![Edge::TurnEnded {
                last_words: self.last_words.take(),
                background: self.background.clone(),
            }]
        }
    }
}

/// Claude Code's stream-json as a [`Headless`] protocol: no handshake; a task is one user
/// message (Claude Code queues what comes during a turn itself); its events are
/// [`StreamEdges`]; a permission request waits on the owner ([`Ask`]), any other control
/// request is refused at once, so the session never waits on an answer that will not come;
/// closing stdin ends it (it finishes the message it is on).
#[derive(Debug, Default)]
pub struct StreamJson {
    edges: StreamEdges,
}

impl Headless for StreamJson {
    fn open(&mut self) -> Vec<String> {
        Vec::new()
    }

    fn input(&mut self, text: &str, _expected: &mut dyn FnMut() -> bool) -> Step {
        Step::write(user_message(text))
    }

    fn read(&mut self, event: &Value, expected: &mut dyn FnMut() -> bool) -> Step {
        let request_id = || {
            event
                .get("request_id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        match event.get("type").and_then(Value::as_str) {
            Some("control_request") => match permission_of(event) {
                Some(permission) => Step {
                    ask: Some(Ask::Permission(permission)),
                    ..Step::default()
                },
                None => {
                    tracing::debug!(request = %event, "refused a control request Taskkeeper does not handle");
                    Step::write(control_error(&request_id(), "not supported by Taskkeeper"))
                }
            },
            Some("control_cancel_request") => Step {
                ask: Some(Ask::Withdrawn(request_id())),
                ..Step::default()
            },
            _ => Step::edges(self.edges.edges(event, expected)),
        }
    }

    fn stop(&mut self) -> Vec<String> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::permission::INPUT_SHOWN;

    /// A session's stream as Claude Code 2.1.332 wrote it (trimmed to the fields that
    /// matter): a turn, a turn that starts a background command, the turn its end wakes.
    const RECORDED: &str = include_str!("../../../../tests/fixtures/stream-json.jsonl");

    /// The recorded stream's edges, with the events `keep` keeps.
    fn recorded_edges(keep: impl Fn(&Value) -> bool) -> Vec<Edge> {
        let mut stream = StreamEdges::default();
        let mut expected = [true, true, false].into_iter();
        RECORDED
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(keep)
            .flat_map(|e| stream.edges(&e, || expected.next().unwrap()))
            .collect()
    }

    #[test]
    fn without_state_events_init_and_result_bracket_the_turns() {
        assert_eq!(
            recorded_edges(|e| e["subtype"] != "session_state_changed"),
            recorded_edges(|_| true)
        );
    }

    #[test]
    fn a_recorded_stream_makes_turns_background_commands_and_last_words() {
        let edges = recorded_edges(|_| true);
        let ended = |words: &str, bg: &[&str]| Edge::TurnEnded {
            last_words: Some(words.into()),
            background: bg.iter().map(|b| (*b).to_owned()).collect(),
        };
        assert_eq!(
            edges,
            [
                Edge::TurnStarted {
                    origin: TurnOrigin::Taskkeeper
                },
                ended("Hello from fake.", &[]),
                Edge::TurnStarted {
                    origin: TurnOrigin::Taskkeeper
                },
                Edge::BackgroundStarted {
                    id: "byysiwr9z".into()
                },
                ended("started it", &["byysiwr9z"]),
                Edge::TurnStarted {
                    origin: TurnOrigin::Background
                },
                ended("ok", &[]),
            ]
        );
    }

    #[test]
    fn a_permission_request_waits_on_the_owner_and_the_answer_resumes_the_turn() {
        let mut stream = StreamEdges::default();
        let state =
            |s: &str| json!({"type": "system", "subtype": "session_state_changed", "state": s});
        let mut edges = Vec::new();
        for (event, expected) in [
            (state("running"), true),
            (state("requires_action"), false),
            (state("running"), false),
            (state("idle"), false),
        ] {
            edges.extend(stream.edges(&event, || expected));
        }
        assert_eq!(
            edges,
            [
                Edge::TurnStarted {
                    origin: TurnOrigin::Taskkeeper
                },
                Edge::WaitingOnOwner,
                Edge::ToolActivity,
                Edge::TurnEnded {
                    last_words: None,
                    background: vec![]
                },
            ]
        );
    }

    /// The request as Claude Code 2.1.332 sends it, and the answers it accepts.
    #[test]
    fn a_permission_request_and_its_answers() {
        let request = json!({"type": "control_request", "request_id": "r-1", "request": {
            "subtype": "can_use_tool", "tool_name": "Bash", "display_name": "Bash",
            "input": {"command": "touch made.txt", "description": "touch"},
            "description": "touch", "permission_suggestions": []}});
        let p = permission_of(&request).unwrap();
        assert_eq!(
            (
                p.request_id.as_str(),
                p.tool.as_str(),
                p.description.as_deref()
            ),
            ("r-1", "Bash", Some("touch"))
        );
        let allow: Value = serde_json::from_str(p.answer(true, None).trim_end()).unwrap();
        assert_eq!(allow["type"], "control_response");
        assert_eq!(allow["response"]["request_id"], "r-1");
        assert_eq!(allow["response"]["response"]["behavior"], "allow");
        assert_eq!(
            allow["response"]["response"]["updatedInput"]["command"],
            "touch made.txt"
        );
        let deny: Value =
            serde_json::from_str(p.answer(false, Some("Not here.")).trim_end()).unwrap();
        assert_eq!(
            (
                &deny["response"]["response"]["behavior"],
                &deny["response"]["response"]["message"]
            ),
            (&json!("deny"), &json!("Not here."))
        );
        // Another control request is not a permission request; a huge input is cut.
        let other = json!({"type": "control_request", "request_id": "r-2",
                           "request": {"subtype": "hook_callback"}});
        assert_eq!(permission_of(&other), None);
        let mut big = request.clone();
        big["request"]["input"] = json!({"content": "x".repeat(5000)});
        let p = permission_of(&big).unwrap();
        assert_eq!(p.input.chars().count(), INPUT_SHOWN + 1);
    }

    #[test]
    fn a_failed_turn_with_a_rate_limit_says_until_when() {
        let mut stream = StreamEdges::default();
        let events = [
            json!({"type": "system", "subtype": "session_state_changed", "state": "running"}),
            json!({"type": "rate_limit_event", "rate_limit_info": {"status": "rejected", "resetsAt": 1_900_000_000}}),
            json!({"type": "result", "subtype": "error_during_execution", "is_error": true}),
            json!({"type": "system", "subtype": "session_state_changed", "state": "idle"}),
        ];
        let edges: Vec<Edge> = events
            .iter()
            .flat_map(|e| stream.edges(e, || true))
            .collect();
        assert_eq!(
            edges.last(),
            Some(&Edge::TurnFailed {
                rate_limited_until: Some(Timestamp::from_millis(1_900_000_000_000))
            })
        );
    }

    #[test]
    fn unknown_and_partial_events_make_nothing() {
        let mut stream = StreamEdges::default();
        for e in [
            json!({}),
            json!({"type": "assistant"}),
            json!({"type": "system", "subtype": "session_state_changed"}),
            json!({"type": "system", "subtype": "task_started"}),
            json!({"type": "system", "subtype": "background_tasks_changed", "tasks": "x"}),
        ] {
            assert_eq!(stream.edges(&e, || unreachable!()), [], "{e}");
        }
    }

    #[test]
    fn a_user_message_is_one_line_of_stream_json() {
        let line = user_message("two\nlines \"quoted\"");
        assert_eq!(line.matches('\n').count(), 1);
        let v: Value = serde_json::from_str(line.trim_end()).unwrap();
        assert_eq!(v["message"]["content"], "two\nlines \"quoted\"");
        assert_eq!(v["type"], "user");
    }

    #[test]
    fn stream_json_as_a_protocol_asks_the_owner_refuses_other_requests_and_reads_turns() {
        let mut s = StreamJson::default();
        let mut yes = || true;
        assert!(s.open().is_empty() && s.stop().is_empty());
        let task = s.input("hi", &mut yes);
        let line: Value = serde_json::from_str(task.write[0].trim_end()).unwrap();
        assert_eq!(line["message"]["content"], "hi");
        let asked = s.read(
            &json!({"type": "control_request", "request_id": "r-1", "request": {
                "subtype": "can_use_tool", "tool_name": "Bash", "input": {}}}),
            &mut yes,
        );
        assert!(matches!(asked.ask, Some(Ask::Permission(p)) if p.request_id == "r-1"));
        let other = s.read(
            &json!({"type": "control_request", "request_id": "r-2", "request": {"subtype": "hook_callback"}}),
            &mut yes,
        );
        let refused: Value = serde_json::from_str(other.write[0].trim_end()).unwrap();
        assert_eq!(refused["response"]["subtype"], "error");
        assert_eq!(
            s.read(
                &json!({"type": "control_cancel_request", "request_id": "r-1"}),
                &mut yes
            )
            .ask,
            Some(Ask::Withdrawn("r-1".into()))
        );
        let running = s.read(
            &json!({"type": "system", "subtype": "session_state_changed", "state": "running"}),
            &mut yes,
        );
        assert_eq!(
            running.edges,
            [Edge::TurnStarted {
                origin: TurnOrigin::Taskkeeper
            }]
        );
    }
}
