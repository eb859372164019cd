//! A2A streams and blocking waits end with their client and are capped per caller: a relay
//! whose client hangs up ends at once (not at the task's next change), and
//! `a2a.streams_per_caller` bounds how many streams and blocking waits one caller holds open,
//! refusing the next with an A2A error that names the limit, and changing nothing.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};
use taskkeeper_core::TaskId;

use crate::support::{TOKEN, TestDaemon};

const V1: Option<&str> = Some("1.0");
const SETTING: &str = "a2a.streams_per_caller";
const REASON: &str = "STREAMS_PER_CALLER_LIMIT";

fn new_desk() -> TestDaemon {
    let d = TestDaemon::start();
    d.with_desk("web");
    d
}

fn send(message_id: &str, method: &str, immediately: bool) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {
        "message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "x"}]},
        "configuration": {"returnImmediately": immediately}}})
}

fn streaming(message_id: &str) -> Value {
    send(message_id, "SendStreamingMessage", false)
}

fn subscribe(id: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": id}})
}

fn worker(d: &TestDaemon, id: &str, status: &str) {
    let (code, body) = d.call(
        "POST",
        &format!("/api/tasks/{id}/update"),
        Some(&json!({"status": status, "text": "done"})),
    );
    assert_eq!(code, 200, "{body}");
}

/// Poll `f` until it holds (the server notices a closed connection on its own time).
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("never happened: {what}");
}

/// One SSE response read line by line; dropping it closes the connection.
struct Stream {
    reader: BufReader<TcpStream>,
}

enum Opened {
    Stream(Stream),
    /// A plain JSON-RPC answer (a refusal).
    Answer(Value),
}

impl Opened {
    fn stream(self) -> Stream {
        match self {
            Opened::Stream(s) => s,
            Opened::Answer(v) => panic!("expected a stream, got {v}"),
        }
    }

    fn refusal(self) -> Value {
        match self {
            Opened::Answer(v) => v,
            Opened::Stream(mut s) => panic!("expected a refusal, got a stream: {:?}", s.next()),
        }
    }
}

fn open(d: &TestDaemon, token: &str, version: Option<&str>, body: &Value) -> Opened {
    let stream = TcpStream::connect(d.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let body = body.to_string();
    let version = version
        .map(|v| format!("A2A-Version: {v}\r\n"))
        .unwrap_or_default();
    write!(
        &stream,
        "POST /a2a/web HTTP/1.0\r\nHost: {}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n{version}Content-Length: {}\r\n\r\n{body}",
        d.host(),
        body.len()
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut sse = false;
    loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "no response head");
        let line = line.trim_end().to_ascii_lowercase();
        if line.is_empty() {
            break;
        }
        sse |= line.starts_with("content-type:") && line.contains("text/event-stream");
    }
    if sse {
        Opened::Stream(Stream { reader })
    } else {
        let mut text = String::new();
        reader.read_to_string(&mut text).unwrap();
        Opened::Answer(serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}")))
    }
}

impl Stream {
    /// The next event, or None when the server ended the stream.
    fn next(&mut self) -> Option<Value> {
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line).unwrap() == 0 {
                return None;
            }
            if let Some(data) = line.strip_prefix("data:") {
                return Some(serde_json::from_str(data.trim()).unwrap());
            }
        }
    }

    fn first_task(&mut self) -> Value {
        let e = self.next().expect("the task first");
        e["result"]["task"].clone()
    }

    fn read_to_end(mut self) -> Vec<Value> {
        std::iter::from_fn(|| self.next()).collect()
    }
}

fn assert_refused(v: &Value, max: &str) {
    let e = &v["error"];
    assert_eq!(e["code"], -32000, "{v}");
    let info = &e["data"][0];
    assert_eq!(info["reason"], REASON, "{v}");
    assert_eq!(info["domain"], "taskkeeper.dev", "{v}");
    assert_eq!(info["metadata"]["setting"], SETTING, "{v}");
    assert_eq!(info["metadata"]["limit"], max, "{v}");
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains(SETTING) && message.contains("too many open streams"),
        "{message}"
    );
}

fn watchers(d: &TestDaemon, id: &str) -> usize {
    d.daemon().tasks().watchers(&TaskId::from(id))
}

#[test]
fn a_stream_whose_client_leaves_ends_without_waiting_for_the_task() {
    let d = new_desk();
    d.set_setting(SETTING, "1");
    let sent = d.rpc("/a2a/web", TOKEN, V1, &send("m-1", "SendMessage", true));
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_owned();
    let before = d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": id}}),
    )["result"]
        .clone();

    // Subscribe, read the task, hang up.
    let mut s = open(&d, TOKEN, V1, &subscribe(&id)).stream();
    assert_eq!(s.first_task()["id"], id.as_str());
    assert_eq!(watchers(&d, &id), 1, "the relay follows the task");
    drop(s);
    // The relay ends on its own, while the task stays as it was.
    eventually("the relay ended", || watchers(&d, &id) == 0);
    // Its slot is free: at a cap of 1 the next stream is admitted.
    let mut again = open(&d, TOKEN, V1, &subscribe(&id)).stream();
    assert_eq!(again.first_task()["status"], before["status"]);
    drop(again);
    eventually("the second relay ended", || watchers(&d, &id) == 0);

    // The same for a stream SendStreamingMessage opened.
    let mut s = open(&d, TOKEN, V1, &streaming("m-2")).stream();
    let queued = s.first_task()["id"].as_str().unwrap().to_owned();
    assert_eq!(watchers(&d, &queued), 1);
    drop(s);
    eventually("the streaming relay ended", || watchers(&d, &queued) == 0);

    let after = d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &json!({"jsonrpc": "2.0", "id": 4, "method": "GetTask", "params": {"id": id}}),
    )["result"]
        .clone();
    assert_eq!(after, before, "the task did not change");
}

#[test]
fn streams_and_blocking_waits_are_capped_per_caller() {
    let d = new_desk();
    d.set_setting(SETTING, "2");
    let alice = d.add_asker("alice");
    let bob = d.add_asker("bob");

    std::thread::scope(|scope| {
        // Alice's first slot: a blocking SendMessage that waits for its task to end. The slot
        // is taken before the task is made, so once the task is there the wait counts.
        let waiting =
            scope.spawn(|| d.rpc("/a2a/web", &alice, V1, &send("m-1", "SendMessage", false)));
        eventually("alice's first task", || d.task_count() == 1);
        let (_, list) = d.call("GET", "/api/tasks", None);
        let first = list["tasks"][0]["id"].as_str().unwrap().to_owned();

        // Her second: a stream of a new task (queued behind the first).
        let mut second = open(&d, &alice, V1, &streaming("m-2")).stream();
        let queued = second.first_task()["id"].as_str().unwrap().to_owned();
        assert_eq!(d.task_count(), 2);

        // A third of any kind is refused, and nothing is made.
        assert_refused(&open(&d, &alice, V1, &streaming("m-3")).refusal(), "2");
        assert_refused(
            &d.rpc("/a2a/web", &alice, V1, &send("m-4", "SendMessage", false)),
            "2",
        );
        assert_refused(&open(&d, &alice, V1, &subscribe(&first)).refusal(), "2");
        // v0.3 names and shape: the reason in a plain `data` object.
        // A v0.3 client reads the refusal from the stream it asked for, its one event.
        let mut refused = open(
            &d,
            &alice,
            None,
            &json!({"jsonrpc": "2.0", "id": 5, "method": "message/stream", "params": {
                "message": {"kind": "message", "messageId": "m-5", "role": "user",
                            "parts": [{"kind": "text", "text": "x"}]}}}),
        )
        .stream();
        let v03 = refused.next().expect("the refusal, as the stream's event");
        assert_eq!(refused.next(), None, "the stream ends after the refusal");
        assert_eq!(v03["error"]["data"]["reason"], REASON, "{v03}");
        assert_eq!(
            v03["error"]["data"]["metadata"]["setting"], SETTING,
            "{v03}"
        );
        assert_eq!(d.task_count(), 2, "a refused request makes no task");
        // A send that answers at once holds nothing and is not counted.
        let quick = d.rpc("/a2a/web", &alice, V1, &send("m-6", "SendMessage", true));
        assert!(quick["result"]["task"]["id"].is_string(), "{quick}");

        // Bob, and the owner, have their own shares.
        let mut bobs = open(&d, &bob, V1, &streaming("m-7")).stream();
        assert!(bobs.first_task()["id"].is_string());
        let mut owners = open(&d, TOKEN, V1, &streaming("m-8")).stream();
        assert!(owners.first_task()["id"].is_string());

        // The wait ends with its task; its slot is back before the answer is sent.
        worker(&d, &first, "done");
        let answer = waiting.join().unwrap();
        assert_eq!(
            answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
            "{answer}"
        );
        let mut third = open(&d, &alice, V1, &subscribe(&first_open(&d, &alice))).stream();
        assert!(third.first_task()["id"].is_string());
        assert_refused(&open(&d, &alice, V1, &streaming("m-9")).refusal(), "2");

        // A stream that ends with its task gives its slot back before the stream closes.
        worker(&d, &queued, "done");
        let events = second.read_to_end();
        assert_eq!(
            events.last().unwrap()["result"]["statusUpdate"]["status"]["state"],
            "TASK_STATE_COMPLETED"
        );
        let fourth = open(&d, &alice, V1, &streaming("m-10")).stream();

        // A client that leaves gives its slot back too.
        drop(fourth);
        eventually("the slot of the client that left is back", || {
            match open(&d, &alice, V1, &streaming("m-11")) {
                Opened::Stream(_) => true,
                Opened::Answer(v) => {
                    assert_refused(&v, "2");
                    false
                }
            }
        });
        drop(third);
    });
}

/// Alice's oldest task that is still open (what she can subscribe to).
fn first_open(d: &TestDaemon, token: &str) -> String {
    let v = d.rpc(
        "/a2a/web",
        token,
        V1,
        &json!({"jsonrpc": "2.0", "id": 6, "method": "ListTasks", "params": {}}),
    );
    v["result"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|t| {
            let s = t["status"]["state"].as_str().unwrap();
            s == "TASK_STATE_WORKING" || s == "TASK_STATE_SUBMITTED"
        })
        .and_then(|t| t["id"].as_str())
        .unwrap()
        .to_owned()
}
