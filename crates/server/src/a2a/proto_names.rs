//! ProtoJSON input: a ProtoJSON parser accepts every field under its proto name
//! (`history_length`) as well as its JSON name (`historyLength`), and A2A v1.0 is defined by
//! its proto, so clients that write proto names (the conformance kit does) are right too.
//!
//! This is one pass over a request's `params`, before anything reads them, that rewrites each
//! key to its JSON name by ProtoJSON's own rule (drop each `_`, upper-case the letter after
//! it). One pass rather than a serde `alias` on every field because an alias has to be
//! written, per field, on every type that reads params (the core's `Message` and `Part`, each
//! method's parameters, and every method added later), and a forgotten one fails silently:
//! serde ignores the unknown name and the field reads as absent, which is exactly how
//! `history_length` used to be lost. The pass covers every field there is and will be, since
//! the rule is the protocol's, not a list of ours.
//!
//! What it must not touch is free-form JSON: the values of `metadata` (a
//! `google.protobuf.Struct`, the asker's own keys) and of a part's `data` (a
//! `google.protobuf.Value`). A key given under both of its names is refused, as ProtoJSON
//! parsers refuse a field given twice.

use serde_json::{Map, Value};

/// Members whose values are free-form JSON in every A2A request that has them.
const FREE_FORM: [&str; 2] = ["metadata", "data"];

/// A field given under both of its names, with where it is: the bindings answer it as
/// invalid params (`From<NamedTwice> for RpcError`).
#[derive(Debug)]
pub struct NamedTwice(pub String);

/// `params` with every key under its ProtoJSON JSON name, or the field named twice.
pub fn json_names(params: Value) -> Result<Value, NamedTwice> {
    rename(params, "params")
}

fn rename(value: Value, path: &str) -> Result<Value, NamedTwice> {
    match value {
        Value::Object(object) => {
            let mut out = Map::with_capacity(object.len());
            // Which key each JSON name came from, to name both in a refusal.
            let mut given: Map<String, Value> = Map::new();
            for (key, inner) in object {
                let name = json_name(&key);
                if let Some(Value::String(first)) = given.get(&name) {
                    return Err(NamedTwice(format!(
                        "{path}: `{first}` and `{key}` are the same field (ProtoJSON accepts \
                         either name); send it once"
                    )));
                }
                given.insert(name.clone(), Value::String(key));
                let inner = if FREE_FORM.contains(&name.as_str()) {
                    inner
                } else {
                    rename(inner, &format!("{path}.{name}"))?
                };
                out.insert(name, inner);
            }
            Ok(Value::Object(out))
        }
        Value::Array(items) => items
            .into_iter()
            .enumerate()
            .map(|(i, v)| rename(v, &format!("{path}[{i}]")))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        other => Ok(other),
    }
}

/// ProtoJSON's JSON name of a proto field name: `task_id` → `taskId`. A name that is
/// already lowerCamelCase has no `_` and comes back as it is.
fn json_name(key: &str) -> String {
    if !key.contains('_') {
        return key.to_owned();
    }
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::rpc::RpcError;
    use serde_json::json;

    #[test]
    fn proto_names_become_json_names_everywhere_but_in_free_form_json() {
        let params = json!({
            "message": {
                "message_id": "m-1", "task_id": "t", "context_id": "c", "role": "ROLE_USER",
                "reference_task_ids": ["r"],
                "parts": [
                    {"text": "x", "media_type": "text/plain"},
                    {"data": {"snake_key": 1, "nested": {"a_b": 2}}},
                ],
                "metadata": {"my_key": {"inner_key": true}},
            },
            "configuration": {
                "return_immediately": true, "history_length": 1,
                "accepted_output_modes": ["text/plain"],
                "task_push_notification_config": {"url": "http://x", "task_id": "t"},
            },
            "metadata": {"asker_key": 1},
        });
        let out = json_names(params).unwrap();
        assert_eq!(
            out,
            json!({
                "message": {
                    "messageId": "m-1", "taskId": "t", "contextId": "c", "role": "ROLE_USER",
                    "referenceTaskIds": ["r"],
                    "parts": [
                        {"text": "x", "mediaType": "text/plain"},
                        {"data": {"snake_key": 1, "nested": {"a_b": 2}}},
                    ],
                    "metadata": {"my_key": {"inner_key": true}},
                },
                "configuration": {
                    "returnImmediately": true, "historyLength": 1,
                    "acceptedOutputModes": ["text/plain"],
                    "taskPushNotificationConfig": {"url": "http://x", "taskId": "t"},
                },
                "metadata": {"asker_key": 1},
            })
        );
    }

    #[test]
    fn json_names_and_values_are_left_alone() {
        let params = json!({"id": "t_1", "historyLength": 2, "status": "TASK_STATE_WORKING"});
        assert_eq!(json_names(params.clone()).unwrap(), params);
    }

    #[test]
    fn a_field_under_both_names_is_refused_naming_both() {
        let e = RpcError::from(
            json_names(json!({"configuration": {"historyLength": 1, "history_length": 2}}))
                .unwrap_err(),
        );
        assert_eq!(e.code, -32602);
        assert!(
            e.message.contains("params.configuration")
                && e.message.contains("`historyLength` and `history_length`"),
            "{}",
            e.message
        );
    }
}
