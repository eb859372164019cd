//! The real scheduler over the real store at scale (issue 13's watchdog goals):
//! [`Watchdog::run`] on the daemon's runtime, its store at `synchronous=FULL`, with 10,000
//! sessions each at its own desk holding one delivered WORKING task, and the change relay
//! (`Sessions::follow_tasks`) the daemon runs beside it. Real time passes; the clock is the
//! wall clock shifted so that the stored turn ends fall where the phases need them:
//!
//! 1. **quiet** (`--quiet` s): nothing is due (the first rung comes a moment after the
//!    phase ends); counts the scheduler's wakes and the process's CPU.
//! 2. **ladders** (`--ladders` s): the sessions' first rungs come due one every
//!    `TURN_END_STEP` (10 a second); counts wakes and CPU, and afterwards reads every
//!    reminded task to see how late its reminder was recorded against when it was due.
//!
//! The scheduler's state is its schedule of due times (one per desk); the bench prints how
//! many desks it holds and the process's resident memory before the scheduler started and
//! after the ladders.
//!
//! ```text
//! CARGO_TARGET_DIR=/work/target cargo bench -p taskkeeper-server --bench watchdog_run
//! cargo bench -p taskkeeper-server --bench watchdog_run -- --sessions 1000 --quiet 20 --ladders 20
//! ```
//!
//! It prints a markdown table for BENCHMARKS.md. Nothing here is asserted.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use taskkeeper_core::session::{Edge, TurnOrigin};
use taskkeeper_core::store::{NewDesk, StateFilter, Synchronous, TaskFilter};
use taskkeeper_core::{
    AgentKind, Clock, DeskName, Event, Message, NewTask, Session, SessionId, Store, StoreOptions,
    SystemClock, Timestamp,
};
use taskkeeper_server::Tasks;
use taskkeeper_server::notify::{EventNotifier, Notifier};
use taskkeeper_server::sessions::Sessions;
use taskkeeper_server::watchdog::Watchdog;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The stored times start here; the clock is shifted to it.
const T0: Timestamp = Timestamp::from_millis(1_796_033_673_887);
const TURN_END_STEP: Duration = Duration::from_millis(100);
/// The default first rung for Claude Code.
const FIRST_RUNG: Duration = Duration::from_secs(5 * 60);

const USAGE: &str = "usage: watchdog_run [--sessions N] [--quiet S] [--ladders S] [--dir PATH]
  --sessions N  sessions, each at its own desk with one task (default 10000)
  --quiet S     seconds with nothing due (default 60)
  --ladders S   seconds while first rungs come due, 10 a second (default 60)
  --dir PATH    where the database goes (default: the system temp dir); use a real disk";

struct Options {
    sessions: usize,
    quiet: u64,
    ladders: u64,
    dir: Option<PathBuf>,
}

fn options() -> Res<Options> {
    let mut o = Options {
        sessions: 10_000,
        quiet: 60,
        ladders: 60,
        dir: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| -> Res<String> {
            Ok(args
                .next()
                .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))?)
        };
        match a.as_str() {
            "--sessions" => o.sessions = value("--sessions")?.parse()?,
            "--quiet" => o.quiet = value("--quiet")?.parse()?,
            "--ladders" => o.ladders = value("--ladders")?.parse()?,
            "--dir" => o.dir = Some(PathBuf::from(value("--dir")?)),
            "--bench" => {}
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other}\n{USAGE}").into()),
        }
    }
    let due_in_run = o.ladders * 1000 / u64::try_from(TURN_END_STEP.as_millis())?;
    if o.quiet == 0 || o.ladders == 0 || (o.sessions as u64) < due_in_run {
        return Err(format!(
            "--quiet and --ladders must be at least 1, and --sessions at least 10 per ladder second\n{USAGE}"
        )
        .into());
    }
    Ok(o)
}

/// The wall clock moved by a fixed offset; the monotonic clock is the system's.
#[derive(Debug, Default)]
struct Shifted {
    offset_ms: AtomicI64,
}

impl Clock for Shifted {
    fn now(&self) -> Timestamp {
        Timestamp::from_millis(
            SystemClock.now().as_millis() + self.offset_ms.load(Ordering::SeqCst),
        )
    }
    fn monotonic(&self) -> Duration {
        SystemClock.monotonic()
    }
}

fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// user + system CPU of this process (all threads), to 10 ms.
fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 10))
}

fn desk_name(i: usize) -> String {
    format!("desk-{i:05}")
}

/// Desks, delivered WORKING tasks and idle sessions, through the store's own calls; session
/// `i`'s turn ended at `T0 + i × TURN_END_STEP`.
fn fill(store: &Store, n: usize) -> Res<()> {
    for i in 0..n {
        let desk: DeskName = desk_name(i).parse()?;
        let dir = PathBuf::from(format!("/home/dev/src/{desk}"));
        store.add_desk(
            NewDesk {
                name: desk.clone(),
                agent: AgentKind::ClaudeCode,
                dir: dir.clone(),
                deliver_command: None,
            },
            T0,
        )?;
        let changed = store.submit(
            NewTask {
                desk: desk.clone(),
                asker: format!("planner-{}", i / 50),
                request: Message::user_text(
                    format!("m-{i}"),
                    "Add a --json flag to the status command and cover it with a test.",
                ),
                context_id: None,
                metadata: serde_json::Map::new(),
            },
            T0,
        )?;
        store.apply(&changed.task.id, Event::Delivered { to: None }, T0)?;
        let mut s = Session::new(
            SessionId::from(format!("session-{i:05}-4f1c9a2e")),
            desk,
            AgentKind::ClaudeCode,
            dir,
            T0,
        );
        s.apply(
            Edge::TurnStarted {
                origin: TurnOrigin::Taskkeeper,
            },
            T0,
        );
        s.apply(
            Edge::TurnEnded {
                last_words: Some("Now writing the probe for the flag…".to_owned()),
                background: vec![],
            },
            T0.plus(TURN_END_STEP * u32::try_from(i)?),
        );
        store.put_session(s)?;
    }
    Ok(())
}

fn percentile(v: &mut [i64], p: f64) -> i64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

fn main() -> Res<()> {
    let o = options()?;
    let dir = match &o.dir {
        Some(d) => tempfile::Builder::new()
            .prefix("watchdog-run")
            .tempdir_in(d)?,
        None => tempfile::Builder::new().prefix("watchdog-run").tempdir()?,
    };
    let db = dir.path().join("taskkeeper.db");
    eprintln!("building a store with {} sessions…", o.sessions);
    {
        let store = Store::open(
            &db,
            StoreOptions {
                synchronous: Synchronous::Normal,
                ..StoreOptions::default()
            },
        )?;
        fill(&store, o.sessions)?;
        store.close();
    }

    let store = Store::open(&db, StoreOptions::default())?;
    let clock = Arc::new(Shifted::default());
    // The first rung (session 0's) comes due just as the quiet phase ends.
    let start_at = T0.plus(FIRST_RUNG).minus(Duration::from_secs(o.quiet));
    clock.offset_ms.store(
        start_at.as_millis() - SystemClock.now().as_millis(),
        Ordering::SeqCst,
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let notifier: Arc<dyn Notifier> = Arc::new(EventNotifier::new(None));
    let files = taskkeeper_server::files::Files::new(dir.path(), 0);
    let tasks = Tasks::new(store.clone(), clock.clone(), files);
    let sessions = Sessions::new(tasks.clone(), stopped.clone(), notifier.clone());
    let dog = Watchdog::new(
        tasks,
        sessions.clone(),
        notifier,
        Arc::new(tokio::sync::Notify::new()),
    );
    let passes = dog.passes();
    let load_before = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let rss_before = status_kib("VmRSS").unwrap_or(0);
    let run_began = Instant::now();
    runtime.spawn(sessions.follow_tasks(stopped.clone()));
    runtime.spawn(dog.run(stopped));

    // The first pass reads everything: wait for it, then measure the quiet phase from there.
    while passes.borrow().looked_at_all.is_none() {
        std::thread::sleep(Duration::from_millis(10));
    }
    let rebuild = run_began.elapsed();
    let rss_rebuilt = status_kib("VmRSS").unwrap_or(0);
    let quiet_end = start_at.plus(Duration::from_secs(o.quiet));
    let (wakes0, cpu0, t0) = (passes.borrow().wakes, process_cpu(), Instant::now());
    std::thread::sleep(Duration::from_millis(
        u64::try_from(quiet_end.as_millis() - clock.now().as_millis()).unwrap_or(0),
    ));
    let (wakes1, cpu1, t1) = (passes.borrow().wakes, process_cpu(), Instant::now());
    std::thread::sleep(Duration::from_secs(o.ladders));
    let (wakes2, cpu2, t2) = (passes.borrow().wakes, process_cpu(), Instant::now());
    let scheduled = passes.borrow().scheduled;
    let rss_after = status_kib("VmRSS").unwrap_or(0);
    let _ = stop.send(true);
    let load_after = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    drop(runtime);

    // How late each reminder was recorded against when it was due.
    let mut late_ms = Vec::new();
    for t in store.tasks(&TaskFilter {
        state: StateFilter::Open,
        ..Default::default()
    })? {
        let (Some(at), Some(i)) = (
            t.last_reminder_at,
            t.desk
                .as_str()
                .strip_prefix("desk-")
                .and_then(|n| n.parse::<u32>().ok()),
        ) else {
            continue;
        };
        if t.reminders_sent != 1 {
            continue;
        }
        let due = T0.plus(TURN_END_STEP * i).plus(FIRST_RUNG);
        late_ms.push(at.as_millis() - due.as_millis());
    }
    store.close();
    let reminded = late_ms.len();
    let expected = o.ladders * 1000 / u64::try_from(TURN_END_STEP.as_millis())?;

    let share = |cpu: Option<Duration>, was: Option<Duration>, wall: Duration| -> String {
        cpu.zip(was).map_or("n/a".into(), |(a, b)| {
            format!(
                "{:.2} %",
                a.saturating_sub(b).as_secs_f64() / wall.as_secs_f64() * 100.0
            )
        })
    };
    let per_min = |n: u64, wall: Duration| n as f64 * 60.0 / wall.as_secs_f64();
    let load = |s: &str| s.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    println!(
        "{} sessions, each at its own desk with one delivered WORKING task; the real `Watchdog::run` \
         and change relay on a multi-thread runtime over the store at synchronous=FULL. First full \
         read: {:.0} ms. Load average before / after: {} / {}.",
        o.sessions,
        rebuild.as_secs_f64() * 1000.0,
        load(&load_before),
        load(&load_after)
    );
    println!();
    println!("| phase | wall | CPU (share of one core) | scheduler wakes | wakes/min |");
    println!("|---|---:|---:|---:|---:|");
    let (quiet_wall, ladder_wall) = (t1 - t0, t2 - t1);
    println!(
        "| nothing due | {:.0} s | {} | {} | {:.1} |",
        quiet_wall.as_secs_f64(),
        share(cpu1, cpu0, quiet_wall),
        wakes1 - wakes0,
        per_min(wakes1 - wakes0, quiet_wall)
    );
    println!(
        "| ladders running (10 first rungs due a second) | {:.0} s | {} | {} | {:.1} |",
        ladder_wall.as_secs_f64(),
        share(cpu2, cpu1, ladder_wall),
        wakes2 - wakes1,
        per_min(wakes2 - wakes1, ladder_wall)
    );
    println!();
    let (p50, p99, max) = (
        percentile(&mut late_ms, 50.0),
        percentile(&mut late_ms, 99.0),
        percentile(&mut late_ms, 100.0),
    );
    println!(
        "Reminders recorded: {reminded} (due in the ladder phase: about {expected}); late by p50 {p50} ms, \
         p99 {p99} ms, max {max} ms. Desks in the schedule at the end: {scheduled}. \
         Resident memory: {:.1} MiB before the scheduler started, {:.1} MiB after its first full read, \
         {:.1} MiB after the ladders.",
        rss_before as f64 / 1024.0,
        rss_rebuilt as f64 / 1024.0,
        rss_after as f64 / 1024.0
    );
    Ok(())
}
