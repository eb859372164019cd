//! Push delivery latency on a real daemon: from a task's transition to the webhook's POST,
//! beside the same transition reaching an SSE subscriber (the reference: the fastest way the
//! daemon already tells an asker).
//!
//! ```text
//! cargo bench -p taskkeeper-server --bench push_latency -- \
//!     --bin target/release/taskkeeper [--rounds 200]
//! ```
//!
//! Starts `taskkeeper serve` on a free port of 127.0.0.1 with a fresh data directory and a
//! webhook of its own (a plain HTTP server on a thread). Each round sends a task with the
//! webhook inline, subscribes to it, waits until both the push of the task and the stream's
//! first event have arrived (so nothing else is in flight), then ends the task through the
//! owner API (`POST /api/tasks/{id}/update`, what `task update` does) and times, from just
//! before that request, the COMPLETED status update at the webhook and on the stream. The
//! time includes the transition's own commit (fsync). Prints one markdown table.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const TOKEN: &str = "push-latency-bench-token-0123456789abcdef";
const WAIT: Duration = Duration::from_secs(30);

struct Daemon {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(bin: &str) -> Result<Daemon, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        l.local_addr().map_err(|e| e.to_string())?.port()
    };
    let mut child = Command::new(bin)
        .args(["serve", "--port", &port.to_string(), "--data-dir"])
        .arg(dir.path())
        .env("TASKKEEPER_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("could not start {bin}: {e}"))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let daemon = Daemon {
        child,
        port,
        _dir: dir,
    };
    let listening = format!("listening on http://127.0.0.1:{port}");
    loop {
        match lines.next() {
            Some(Ok(line)) if line.starts_with(&listening) => break,
            Some(Ok(_)) => {}
            _ => return Err(format!("{bin} ended before it listened on {port}")),
        }
    }
    std::thread::spawn(move || lines.for_each(drop));
    Ok(daemon)
}

fn request(port: u16, method: &str, path: &str, body: &Value) -> Result<(u16, Value), String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    let body = body.to_string();
    write!(
        s,
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .map_err(|e| e.to_string())?;
    let mut text = String::new();
    s.read_to_string(&mut text).map_err(|e| e.to_string())?;
    let (head, body) = text.split_once("\r\n\r\n").ok_or("no response head")?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Ok((status, serde_json::from_str(body).unwrap_or(Value::Null)))
}

/// (task id, push member, state, when it arrived) for every push the webhook receives.
type Arrival = (String, String, String, Instant);

fn webhook() -> Result<(u16, mpsc::Receiver<Arrival>), String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let Ok(clone) = conn.try_clone() else {
                continue;
            };
            let mut reader = BufReader::new(clone);
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((k, v)) = line.split_once(':')
                    && k.eq_ignore_ascii_case("content-length")
                {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; len];
            let _ = reader.read_exact(&mut body);
            let at = Instant::now();
            let _ = conn
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            if let Some((member, item)) = v.as_object().and_then(|o| o.iter().next()) {
                let id = item
                    .get("taskId")
                    .or(item.get("id"))
                    .and_then(Value::as_str);
                let state = item["status"]["state"].as_str().unwrap_or("");
                let _ = tx.send((
                    id.unwrap_or("").to_owned(),
                    member.clone(),
                    state.to_owned(),
                    at,
                ));
            }
        }
    });
    Ok((port, rx))
}

/// Subscribe to `id`; say when the stream's first event and its COMPLETED update arrive.
fn subscribe(port: u16, id: &str) -> Result<mpsc::Receiver<(bool, Instant)>, String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(WAIT)).map_err(|e| e.to_string())?;
    let body =
        json!({"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": id}})
            .to_string();
    write!(
        s,
        "POST /a2a/bench HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .map_err(|e| e.to_string())?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(s).lines() {
            let Ok(line) = line else { return };
            let Some(data) = line.strip_prefix("data:") else {
                continue;
            };
            let at = Instant::now();
            let v: Value = serde_json::from_str(data.trim()).unwrap_or(Value::Null);
            let done = v["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED";
            if tx.send((done, at)).is_err() || done {
                return;
            }
        }
    });
    Ok(rx)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

fn run(bin: &str, rounds: usize) -> Result<(), String> {
    let d = start(bin)?;
    let (hook_port, arrivals) = webhook()?;
    let (status, v) = request(
        d.port,
        "POST",
        "/api/desks",
        &json!({"name": "bench", "dir": "/tmp", "agent": "generic"}),
    )?;
    if status != 201 {
        return Err(format!("adding the desk: HTTP {status}: {v}"));
    }
    // The webhook is on this machine, which the owner allows.
    let (status, v) = request(
        d.port,
        "PUT",
        "/api/settings",
        &json!({"push.allow_loopback_targets": "true"}),
    )?;
    if status != 200 {
        return Err(format!("allowing loopback webhooks: HTTP {status}: {v}"));
    }
    let (mut push, mut stream) = (Vec::new(), Vec::new());
    for n in 0..rounds {
        let send = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
            "message": {"messageId": format!("m-{n}"), "role": "ROLE_USER", "parts": [{"text": "bench"}]},
            "configuration": {"returnImmediately": true,
                              "taskPushNotificationConfig": {"url": format!("http://127.0.0.1:{hook_port}/hook")}}}});
        let (_, sent) = request(d.port, "POST", "/a2a/bench", &send)?;
        let id = sent["result"]["task"]["id"]
            .as_str()
            .ok_or_else(|| format!("no task: {sent}"))?
            .to_owned();
        let events = subscribe(d.port, &id)?;
        events
            .recv_timeout(WAIT)
            .map_err(|_| "no first stream event")?;
        loop {
            let (task, member, _, _) = arrivals.recv_timeout(WAIT).map_err(|_| "no first push")?;
            if task == id && member == "task" {
                break;
            }
        }
        let t0 = Instant::now();
        let (status, v) = request(
            d.port,
            "POST",
            &format!("/api/tasks/{id}/update"),
            &json!({"status": "done", "text": "done"}),
        )?;
        if status != 200 {
            return Err(format!("ending the task: HTTP {status}: {v}"));
        }
        loop {
            let (task, member, state, at) = arrivals
                .recv_timeout(WAIT)
                .map_err(|_| "no COMPLETED push")?;
            if task == id && member == "statusUpdate" && state == "TASK_STATE_COMPLETED" {
                push.push(at - t0);
                break;
            }
        }
        loop {
            let (done, at) = events
                .recv_timeout(WAIT)
                .map_err(|_| "no COMPLETED event")?;
            if done {
                stream.push(at - t0);
                break;
            }
        }
    }
    push.sort();
    stream.sort();
    println!("| path | rounds | p50 ms | p99 ms | max ms |");
    println!("|---|---|---|---|---|");
    for (name, v) in [
        ("webhook POST (push)", &push),
        ("SSE subscriber (reference)", &stream),
    ] {
        println!(
            "| {name} | {} | {} | {} | {} |",
            v.len(),
            ms(percentile(v, 0.5)),
            ms(percentile(v, 0.99)),
            ms(percentile(v, 1.0))
        );
    }
    println!(
        "\npush / stream: p50 {:.2}x, p99 {:.2}x",
        percentile(&push, 0.5).as_secs_f64() / percentile(&stream, 0.5).as_secs_f64(),
        percentile(&push, 0.99).as_secs_f64() / percentile(&stream, 0.99).as_secs_f64()
    );
    Ok(())
}

fn main() {
    let mut bin = None;
    let mut rounds = 200usize;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--bench" => {}
            "--bin" => bin = it.next(),
            "--rounds" => rounds = it.next().and_then(|v| v.parse().ok()).unwrap_or(rounds),
            other => {
                eprintln!("unknown argument {other}; usage: push_latency --bin PATH [--rounds N]");
                std::process::exit(2);
            }
        }
    }
    let Some(bin) = bin else {
        eprintln!("usage: push_latency --bin PATH [--rounds N]");
        std::process::exit(2);
    };
    if let Err(e) = run(&bin, rounds.max(1)) {
        eprintln!("push_latency: {e}");
        std::process::exit(1);
    }
}
