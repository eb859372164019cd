//! Streams that end with their client, measured on a real daemon (`bench/a2a/streams.sh`):
//! start a release `taskkeeper serve`, give it one large open task (~900 KB of history), then
//! subscribe to that task and hang up after the first event, N times in a row, reading the
//! daemon's resident memory (`VmRSS` in `/proc/PID/status`) before, every N/10 rounds, and
//! after a short settle. A daemon whose relays outlive their clients grows by about two copies
//! of the task per round; one whose relays end with their clients stays flat.
//!
//! ```text
//! cargo bench -p taskkeeper-server --bench stream_churn -- \
//!     --bin target/release/taskkeeper [--label ours] [--bin OTHER --label old] \
//!     [--rounds 1000] [--task-kb 900] [--chunk-kb 100]
//! ```
//!
//! Each `--bin` gets its own daemon on a free port of 127.0.0.1 and a fresh data directory,
//! one after the other, and is stopped (by its own pid) when its run ends. The task is built
//! from one message and follow-ups of `--chunk-kb` each, so no single request is large. Prints
//! one markdown table with a row per binary. Plain threads and blocking sockets, like
//! `a2a_load.rs`: the client stays cheap on a 2-core machine.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const TOKEN: &str = "stream-churn-bench-token-0123456789abcdef";

struct Args {
    bins: Vec<(String, String)>,
    rounds: usize,
    task_kb: usize,
    chunk_kb: usize,
}

fn usage() -> String {
    "usage: stream_churn --bin PATH [--label NAME] [--bin PATH [--label NAME]]... \
     [--rounds 1000] [--task-kb 900] [--chunk-kb 100]"
        .to_owned()
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        bins: Vec::new(),
        rounds: 1000,
        task_kb: 900,
        chunk_kb: 100,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        // `cargo bench` passes `--bench` to every bench binary; it means nothing here.
        if flag == "--bench" {
            continue;
        }
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("{flag} needs a value\n{}", usage()))
        };
        let number = |v: String| {
            v.parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("{flag} takes a whole number above 0, not {v:?}"))
        };
        match flag.as_str() {
            "--bin" => {
                let path = value()?;
                let label = format!("bin{}", args.bins.len() + 1);
                args.bins.push((path, label));
            }
            "--label" => {
                let label = value()?;
                let last = args
                    .bins
                    .last_mut()
                    .ok_or_else(|| format!("--label names the --bin before it\n{}", usage()))?;
                last.1 = label;
            }
            "--rounds" => args.rounds = number(value()?)?,
            "--task-kb" => args.task_kb = number(value()?)?,
            "--chunk-kb" => args.chunk_kb = number(value()?)?,
            other => return Err(format!("unknown flag {other}\n{}", usage())),
        }
    }
    if args.bins.is_empty() {
        return Err(format!("--bin is required\n{}", usage()));
    }
    Ok(args)
}

/// A daemon this bench started; stopped by its own pid when dropped.
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

fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

fn start(bin: &str) -> Result<Daemon, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let port = free_port()?;
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
    let listening = format!("listening on http://127.0.0.1:{port}");
    let daemon = Daemon {
        child,
        port,
        _dir: dir,
    };
    loop {
        match lines.next() {
            Some(Ok(line)) if line.starts_with(&listening) => break,
            Some(Ok(_)) => {}
            _ => return Err(format!("{bin} ended before it listened on {port}")),
        }
    }
    // Keep reading its stdout so the daemon never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    Ok(daemon)
}

/// One request on its own connection; the status and the body.
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
    let value = serde_json::from_str(body).unwrap_or(Value::String(body.to_owned()));
    Ok((status, value))
}

fn rpc(port: u16, method: &str, params: Value) -> Result<Value, String> {
    let (status, v) = request(
        port,
        "POST",
        "/a2a/bench",
        &json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
    )?;
    if status != 200 || v.get("error").is_some() {
        return Err(format!("{method}: HTTP {status}: {v}"));
    }
    Ok(v["result"].clone())
}

/// A desk and one open task of about `task_kb` KB of history, in `chunk_kb` messages.
fn large_task(port: u16, task_kb: usize, chunk_kb: usize) -> Result<(String, usize), String> {
    let (status, v) = request(
        port,
        "POST",
        "/api/desks",
        &json!({"name": "bench", "dir": "/tmp", "agent": "generic"}),
    )?;
    if status != 201 {
        return Err(format!("adding the desk: HTTP {status}: {v}"));
    }
    let chunk = "x".repeat(chunk_kb * 1000);
    let mut id: Option<String> = None;
    for n in 0..task_kb.div_ceil(chunk_kb) {
        let mut message = json!({"messageId": format!("m-{n}"), "role": "ROLE_USER",
                                 "parts": [{"text": chunk}]});
        if let Some(id) = &id {
            message["taskId"] = json!(id);
        }
        let r = rpc(
            port,
            "SendMessage",
            json!({"message": message, "configuration": {"returnImmediately": true}}),
        )?;
        id = r["task"]["id"].as_str().map(str::to_owned);
    }
    let id = id.ok_or("no task id")?;
    let task = rpc(port, "GetTask", json!({"id": id}))?;
    Ok((id, task.to_string().len()))
}

/// Subscribe to `id`, read the first event whole, hang up.
fn subscribe_and_leave(port: u16, id: &str) -> Result<(), String> {
    let s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|e| e.to_string())?;
    let body =
        json!({"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": id}})
            .to_string();
    write!(
        &s,
        "POST /a2a/bench HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(s);
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
            return Err("the stream ended before its first event".to_owned());
        }
        if line.starts_with("data:") {
            if line.contains("\"error\"") && !line.contains("\"task\"") {
                return Err(format!("refused: {}", &line[..line.len().min(300)]));
            }
            return Ok(());
        }
    }
}

/// The resident memory of `pid` in KiB.
fn rss_kib(pid: u32) -> Result<u64, String> {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|e| e.to_string())?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| "no VmRSS".to_owned())
}

struct Run {
    label: String,
    task_bytes: usize,
    before: u64,
    checkpoints: Vec<u64>,
    settled: u64,
    seconds: f64,
}

fn run(bin: &str, label: &str, args: &Args) -> Result<Run, String> {
    let daemon = start(bin)?;
    let pid = daemon.child.id();
    let (id, task_bytes) = large_task(daemon.port, args.task_kb, args.chunk_kb)?;
    // One round first, so the 'before' figure includes what any first stream allocates once.
    subscribe_and_leave(daemon.port, &id)?;
    std::thread::sleep(Duration::from_millis(500));
    let before = rss_kib(pid)?;
    let step = args.rounds.div_ceil(10);
    let mut checkpoints = Vec::new();
    let t0 = Instant::now();
    for n in 1..=args.rounds {
        subscribe_and_leave(daemon.port, &id).map_err(|e| format!("round {n}: {e}"))?;
        if n % step == 0 || n == args.rounds {
            checkpoints.push(rss_kib(pid)?);
        }
    }
    let seconds = t0.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_secs(1));
    let settled = rss_kib(pid)?;
    eprintln!("== {label}: {} rounds in {seconds:.1} s", args.rounds);
    Ok(Run {
        label: label.to_owned(),
        task_bytes,
        before,
        checkpoints,
        settled,
        seconds,
    })
}

fn mib(kib: u64) -> String {
    format!("{:.0}", kib as f64 / 1024.0)
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let mut runs = Vec::new();
    for (bin, label) in &args.bins {
        eprintln!("== {label}: {bin}");
        match run(bin, label, &args) {
            Ok(r) => runs.push(r),
            Err(e) => {
                eprintln!("{label}: {e}");
                std::process::exit(1);
            }
        }
    }
    println!(
        "{} rounds of SubscribeToTask + first event + hang-up against one open task; VmRSS in MiB.",
        args.rounds
    );
    println!();
    println!(
        "| daemon | task (GetTask bytes) | RSS before | RSS every {} rounds | RSS 1 s after | growth | per round | rounds/s |",
        args.rounds.div_ceil(10)
    );
    println!("|---|---:|---:|---|---:|---:|---:|---:|");
    for r in &runs {
        let growth = r.settled.saturating_sub(r.before);
        println!(
            "| {} | {} | {} | {} | {} | {} MiB | {:.1} KiB | {:.0} |",
            r.label,
            r.task_bytes,
            mib(r.before),
            r.checkpoints
                .iter()
                .map(|k| mib(*k))
                .collect::<Vec<_>>()
                .join(" → "),
            mib(r.settled),
            mib(growth),
            growth as f64 / args.rounds as f64,
            args.rounds as f64 / r.seconds,
        );
    }
}
