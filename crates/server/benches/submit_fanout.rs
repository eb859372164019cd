//! What a submit costs as the queue and the waiters grow (issue 13's first two goals): the
//! p50 of `POST /api/tasks` on a real daemon (in this process, its durable store at
//! `synchronous=FULL` in a temp dir) in four cells, each on a fresh daemon:
//!
//! - **empty desk**: every submit goes to a desk of its own, which is free;
//! - **1,000 queued**: every submit goes to one desk already holding a working task and
//!   1,000 queued ones (the queue grows by one per call);
//! - **no waiters** / **300 waiters**: every submit goes to a free desk of its own, while 300
//!   other sessions, each at a desk of its own, hold a `hook wait` long poll open.
//!
//! Beside each p50 it prints what the whole daemon read from its store per submit over the
//! cell (`Store::reads`: statements, tasks decoded, SQLite VM steps), the submit itself and
//! every loop that looked again after it: a cost that grows with the queue shows there first.
//!
//! Before issue 13 a submit loaded and decoded the desk's whole queue twice, and every waiter
//! re-read its session on every change of anything; the goal is ≤ 1.5× between the cells of
//! each pair.
//!
//! ```text
//! CARGO_TARGET_DIR=/work/target cargo bench -p taskkeeper-server --bench submit_fanout
//! cargo bench -p taskkeeper-server --bench submit_fanout -- --calls 200 --queued 1000 --waiters 300
//! ```
//!
//! It prints a markdown table for BENCHMARKS.md. Nothing here is asserted.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use taskkeeper_server::{Daemon, DaemonConfig};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const TOKEN: &str = "bench-owner-token-0123456789abcdef";

const USAGE: &str = "usage: submit_fanout [--calls N] [--queued Q] [--waiters W]
  --calls N    timed submits per cell (default 200)
  --queued Q   tasks queued on the deep desk first (default 1000)
  --waiters W  open waiters in the waiter cell (default 300)";

struct Options {
    calls: usize,
    queued: usize,
    waiters: usize,
}

fn options() -> Res<Options> {
    let mut o = Options {
        calls: 200,
        queued: 1000,
        waiters: 300,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| -> Res<usize> {
            Ok(args
                .next()
                .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))?
                .parse()?)
        };
        match a.as_str() {
            "--calls" => o.calls = value("--calls")?,
            "--queued" => o.queued = value("--queued")?,
            "--waiters" => o.waiters = value("--waiters")?,
            "--bench" => {}
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other}\n{USAGE}").into()),
        }
    }
    if o.calls == 0 {
        return Err(format!("--calls must be at least 1\n{USAGE}").into());
    }
    Ok(o)
}

struct Bench {
    _dir: tempfile::TempDir,
    root: PathBuf,
    runtime: tokio::runtime::Runtime,
    daemon: Option<Daemon>,
    base: String,
    agent: ureq::Agent,
}

impl Bench {
    fn start() -> Res<Bench> {
        let dir = tempfile::tempdir()?;
        let root = dir.path().to_owned();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        let mut config = DaemonConfig::new(0, root.clone());
        config.token = Some(TOKEN.to_owned());
        config.home = Some(root.join("home"));
        let daemon = runtime.block_on(Daemon::start(config))?;
        let base = format!("http://{}", daemon.addr());
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let b = Bench {
            _dir: dir,
            root,
            runtime,
            daemon: Some(daemon),
            base,
            agent,
        };
        for (k, v) in [
            ("limits.open_tasks_per_asker", "100000"),
            ("sessions.create_desks_max", "100000"),
        ] {
            b.call("PUT", "/api/settings", &json!({ k: v }))?;
        }
        Ok(b)
    }

    fn call(&self, method: &str, path: &str, body: &Value) -> Res<Value> {
        let url = format!("{}{path}", self.base);
        let req = match method {
            "PUT" => self.agent.put(&url),
            _ => self.agent.post(&url),
        };
        let mut resp = req
            .header("Authorization", format!("Bearer {TOKEN}"))
            .header("Content-Type", "application/json")
            .send(body.to_string())?;
        let status = resp.status().as_u16();
        let text = resp.body_mut().read_to_string()?;
        if status >= 300 {
            return Err(format!("{method} {path}: {status} {text}").into());
        }
        Ok(serde_json::from_str(&text)?)
    }

    fn desk(&self, name: &str) -> Res<PathBuf> {
        let dir = self.root.join("desks").join(name);
        std::fs::create_dir_all(&dir)?;
        self.call(
            "POST",
            "/api/desks",
            &json!({"name": name, "dir": dir, "agent": "claude-code"}),
        )?;
        Ok(dir)
    }

    fn submit(&self, desk: &str, text: &str) -> Res<Duration> {
        let t = Instant::now();
        self.call("POST", "/api/tasks", &json!({"desk": desk, "text": text}))?;
        Ok(t.elapsed())
    }

    fn reads(&self) -> taskkeeper_core::store::Reads {
        self.daemon
            .as_ref()
            .map(|d| d.store().reads())
            .unwrap_or_default()
    }

    fn hook(&self, session: &str, event: &str, cwd: &Path) -> Res<()> {
        let daemon = self.daemon.as_ref().ok_or("no daemon")?;
        let mut resp = self
            .agent
            .post(format!("{}/hooks/claude-code", self.base))
            .header(
                "Authorization",
                format!("Bearer {}", daemon.worker_token().as_str()),
            )
            .header("Content-Type", "application/json")
            .send(
                json!({"session_id": session, "hook_event_name": event, "cwd": cwd, "source": "startup"})
                    .to_string(),
            )?;
        let status = resp.status().as_u16();
        let text = resp.body_mut().read_to_string()?;
        if status != 200 {
            return Err(format!("{event}: {status} {text}").into());
        }
        Ok(())
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        if let Some(d) = self.daemon.take() {
            self.runtime.block_on(d.shutdown());
        }
    }
}

fn p50(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1000.0
}

/// Submits to free desks of their own, one each (the desks made first).
fn free_desks(b: &Bench, calls: usize, prefix: &str) -> Res<Cell> {
    let desks: Vec<String> = (0..calls).map(|i| format!("{prefix}-{i:04}")).collect();
    for desk in &desks {
        b.desk(desk)?;
    }
    let mut times = Vec::with_capacity(calls);
    let before = b.reads();
    for desk in &desks {
        times.push(b.submit(desk, "Add a --json flag to the status command.")?);
    }
    let read = b.reads() - before;
    Ok(Cell {
        p50: p50(times),
        per_call: per_call(read, calls),
    })
}

fn deep_desk(b: &Bench, calls: usize, queued: usize) -> Res<Cell> {
    b.desk("deep")?;
    for i in 0..=queued {
        b.submit("deep", &format!("queued {i}"))?;
    }
    let mut times = Vec::with_capacity(calls);
    let before = b.reads();
    for _ in 0..calls {
        times.push(b.submit("deep", "Add a --json flag to the status command.")?);
    }
    let read = b.reads() - before;
    Ok(Cell {
        p50: p50(times),
        per_call: per_call(read, calls),
    })
}

/// What the whole daemon read per submit over a cell (the store's counters: the submit
/// itself and every loop that looked again after it), as (statements, tasks decoded, SQLite
/// VM steps).
fn per_call(read: taskkeeper_core::store::Reads, calls: usize) -> (f64, f64, f64) {
    let n = calls as f64;
    (
        read.statements as f64 / n,
        read.tasks_decoded as f64 / n,
        read.vm_steps as f64 / n,
    )
}

struct Cell {
    p50: f64,
    per_call: (f64, f64, f64),
}

/// `waiters` sessions at desks of their own, each with a waiter open (on its own thread).
fn open_waiters(b: &Bench, waiters: usize) -> Res<Vec<std::thread::JoinHandle<()>>> {
    let daemon = b.daemon.as_ref().ok_or("no daemon")?;
    let worker = daemon.worker_token().as_str().to_owned();
    let mut handles = Vec::new();
    for i in 0..waiters {
        let desk = format!("waiting-{i:04}");
        let cwd = b.desk(&desk)?;
        let session = format!("session-{i:04}");
        b.hook(&session, "SessionStart", &cwd)?;
        let (url, worker) = (format!("{}/hooks/claude-code/wait", b.base), worker.clone());
        handles.push(std::thread::spawn(move || {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .build()
                .into();
            let _ = agent
                .post(url)
                .header("Authorization", format!("Bearer {worker}"))
                .header("Content-Type", "application/json")
                .send(
                    json!({"session_id": session, "hook_event_name": "Stop", "cwd": cwd})
                        .to_string(),
                );
        }));
    }
    let ids: Vec<taskkeeper_core::SessionId> = (0..waiters)
        .map(|i| taskkeeper_core::SessionId::from(format!("session-{i:04}")))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ids.iter().all(|id| daemon.delivery().has_waiter(id)) {
        if Instant::now() > deadline {
            return Err("the waiters did not all open".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(handles)
}

fn main() -> Res<()> {
    let o = options()?;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let empty = free_desks(&Bench::start()?, o.calls, "free")?;
    let deep = deep_desk(&Bench::start()?, o.calls, o.queued)?;
    let none = free_desks(&Bench::start()?, o.calls, "free")?;
    let (with_waiters, wakes) = {
        let b = Bench::start()?;
        let handles = open_waiters(&b, o.waiters)?;
        let before = b.daemon.as_ref().map_or(0, |d| d.delivery().waiter_wakes());
        let p = free_desks(&b, o.calls, "free")?;
        let wakes = b.daemon.as_ref().map_or(0, |d| d.delivery().waiter_wakes()) - before;
        drop(b);
        for h in handles {
            let _ = h.join();
        }
        (p, wakes)
    };
    let load_after = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let row = |name: &str, c: &Cell, base: &Cell| {
        let (st, dec, steps) = c.per_call;
        println!(
            "| {name} | {:.2} ms | {:.2}× | {st:.1} | {dec:.1} | {steps:.0} |",
            c.p50,
            c.p50 / base.p50
        );
    };
    println!(
        "| cell | submit p50 | ratio | statements / submit | tasks decoded / submit | SQLite steps / submit |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    row("empty desk", &empty, &empty);
    row(&format!("desk with {} queued", o.queued), &deep, &empty);
    row("no waiters", &none, &none);
    row(&format!("{} waiters open", o.waiters), &with_waiters, &none);
    println!();
    println!(
        "{} submits per cell; waiter wakes during the waiter cell: {wakes}; load {} → {}",
        o.calls,
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
        load_after
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    Ok(())
}
