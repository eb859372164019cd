//! Builders shared by the tests.

use serde_json::Map;
use taskkeeper_core::{Message, NewTask, Task, TaskId, Timestamp};

pub const T0: Timestamp = Timestamp::from_millis(1_796_033_673_887);

pub fn new_task(desk: &str, asker: &str, message_id: &str, text: &str) -> NewTask {
    NewTask {
        desk: desk.parse().unwrap(),
        asker: asker.to_owned(),
        request: Message::user_text(message_id, text),
        context_id: None,
        metadata: Map::new(),
    }
}

pub fn submitted(id: &str, seq: i64) -> Task {
    Task::submit(
        TaskId::from(id),
        new_task("web", "asker", &format!("m-{id}"), "do it"),
        seq,
        T0,
    )
}
