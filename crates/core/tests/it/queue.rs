//! Which queued task a desk starts next.

use taskkeeper_core::queue::{holds_desk, next_to_start, positions};
use taskkeeper_core::{TaskState, Timestamp};

use crate::support::submitted;

#[test]
fn first_in_first_out_while_nothing_holds_the_desk() {
    let tasks = vec![submitted("c", 3), submitted("a", 1), submitted("b", 2)];
    assert_eq!(next_to_start(&tasks).map(|t| t.id.as_str()), Some("a"));
}

#[test]
fn a_working_task_holds_the_desk_until_it_is_blocked_or_stalls() {
    let mut working = submitted("w", 1);
    working.status.state = TaskState::Working;
    let queued = submitted("q", 2);
    assert!(holds_desk(&working));
    assert_eq!(next_to_start([&working, &queued]), None);

    let mut blocked = working.clone();
    blocked.status.state = TaskState::InputRequired;
    assert!(!holds_desk(&blocked));
    assert_eq!(
        next_to_start([&blocked, &queued]).map(|t| t.id.as_str()),
        Some("q")
    );

    let mut stalled = working.clone();
    stalled.stalled_at = Some(Timestamp::from_millis(1));
    assert!(!holds_desk(&stalled));
    assert_eq!(
        next_to_start([&stalled, &queued]).map(|t| t.id.as_str()),
        Some("q")
    );
}

#[test]
fn positions_count_from_one_in_queue_order() {
    let mut working = submitted("w", 1);
    working.status.state = TaskState::Working;
    let mut tasks = vec![submitted("z", 9), working, submitted("y", 4)];
    positions(&mut tasks);
    let got: Vec<_> = tasks
        .iter()
        .map(|t| (t.id.as_str(), t.queue_position))
        .collect();
    assert_eq!(got, vec![("z", Some(2)), ("w", None), ("y", Some(1))]);
}
