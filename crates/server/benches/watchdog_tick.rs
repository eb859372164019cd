//! One real watchdog wake at scale: [`Watchdog::tick`] over a store holding 10,000 sessions,
//! each at its own desk with one delivered WORKING task, all created through the store's own
//! calls (`add_desk`, `submit`, `apply`, `put_session`).
//!
//! Why it exists: the policy bench (`crates/core/benches/watchdog.rs`) simulates the
//! scheduler with the sessions and tasks already in memory; the real scheduler reads all of
//! them from SQLite on every plan. This measures what one plan really costs, split into its
//! parts (the store reads, pairing sessions with their desks' tasks, the policy), and what a
//! plan that sends reminders adds (each reminder is two durable writes: the task's rung and the
//! session's message record). Its "nothing due" time is the `--tick-cost-ms` to feed the
//! policy bench.
//!
//! Run it (about a minute, most of it building the store):
//!
//! ```text
//! CARGO_TARGET_DIR=/work/target cargo bench -p taskkeeper-server --bench watchdog_tick
//! cargo bench -p taskkeeper-server --bench watchdog_tick -- --sessions 1000 --ticks 50
//! ```
//!
//! It prints a markdown table for BENCHMARKS.md. Nothing here is asserted.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use taskkeeper_core::session::{Edge, TurnOrigin};
use taskkeeper_core::store::{NewDesk, StateFilter, Synchronous, TaskFilter};
use taskkeeper_core::watchdog;
use taskkeeper_core::{
    AgentKind, DeskName, Event, ManualClock, Message, NewTask, Session, SessionId, Store,
    StoreOptions, Task, Timestamp,
};
use taskkeeper_server::Tasks;
use taskkeeper_server::notify::{EventNotifier, Notifier};
use taskkeeper_server::sessions::Sessions;
use taskkeeper_server::watchdog::Watchdog;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const T0: Timestamp = Timestamp::from_millis(1_796_033_673_887);
/// Turn ends 100 ms apart: at T0 + 5 min the first session's first rung is due, 10 s later
/// the next 100 sessions' are.
const TURN_END_STEP: Duration = Duration::from_millis(100);
const FIRST_RUNG: Duration = Duration::from_secs(5 * 60);

const USAGE: &str = "usage: watchdog_tick [--sessions N] [--ticks K] [--dir PATH]
  --sessions N  sessions, each at its own desk with one task (default 10000)
  --ticks K     nothing-due ticks to time (default 20)
  --dir PATH    where the database goes (default: the system temp dir); use a real disk";

struct Options {
    sessions: usize,
    ticks: usize,
    dir: Option<PathBuf>,
}

fn options() -> Res<Options> {
    let mut o = Options {
        sessions: 10_000,
        ticks: 20,
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
            "--ticks" => o.ticks = value("--ticks")?.parse()?,
            "--dir" => o.dir = Some(PathBuf::from(value("--dir")?)),
            // cargo bench passes --bench to every bench binary.
            "--bench" => {}
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other}\n{USAGE}").into()),
        }
    }
    if o.sessions < 101 || o.ticks == 0 {
        return Err(format!("--sessions must be over 100 and --ticks at least 1\n{USAGE}").into());
    }
    Ok(o)
}

fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
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

/// 10k desks, sessions and delivered tasks, written through the store's own calls.
fn fill(store: &Store, n: usize) -> Res<()> {
    for i in 0..n {
        let desk: DeskName = format!("desk-{i:05}").parse()?;
        let dir = PathBuf::from(format!("/home/dev/src/desk-{i:05}"));
        store.add_desk(
            NewDesk {
                name: desk.clone(),
                agent: AgentKind::ClaudeCode,
                dir: dir.clone(),
                deliver_command: None,
            },
            T0,
        )?;
        // The desk is free: the task starts at once.
        let changed = store.submit(
            NewTask {
                desk: desk.clone(),
                // One asker per task: `limits.open_tasks_per_asker` bounds each asker.
                asker: format!("planner-{i:05}"),
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
        let ended = T0.plus(TURN_END_STEP * u32::try_from(i)?);
        s.apply(
            Edge::TurnEnded {
                last_words: Some("Now writing the probe for the flag…".to_owned()),
                background: vec![],
            },
            ended,
        );
        store.put_session(s)?;
    }
    Ok(())
}

#[derive(Default)]
struct Samples(Vec<Duration>);

impl Samples {
    fn ms(&self, p: f64) -> f64 {
        let mut v = self.0.clone();
        v.sort();
        if v.is_empty() {
            return f64::NAN;
        }
        let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
        v[rank.clamp(1, v.len()) - 1].as_secs_f64() * 1000.0
    }
}

/// The parts of one plan, done the way `Watchdog::tick` does them, timed one by one.
#[derive(Default)]
struct Parts {
    read_tasks: Samples,
    read_sessions: Samples,
    read_settings: Samples,
    pair: Samples,
    /// The same pairing through an index of the open tasks by desk (a what-if).
    pair_indexed: Samples,
    plan: Samples,
    /// The owner API's timelines (`watchdog::timeline`) of every open task, each with its
    /// desk's holder, as `OwnerService::list_tasks` makes them.
    timelines: Samples,
}

fn parts(store: &Store, now: Timestamp, parts: &mut Parts) -> Res<()> {
    let t = Instant::now();
    let open = store.tasks(&TaskFilter {
        state: StateFilter::Open,
        ..Default::default()
    })?;
    parts.read_tasks.0.push(t.elapsed());
    let t = Instant::now();
    let all = store.sessions(None)?;
    parts.read_sessions.0.push(t.elapsed());
    let t = Instant::now();
    let settings = store.settings()?;
    parts.read_settings.0.push(t.elapsed());
    let t = Instant::now();
    // As `tick` does: the newest live session of each desk, then each with its desk's tasks.
    let mut seen: HashSet<DeskName> = HashSet::new();
    let holders: Vec<Session> = all
        .into_iter()
        .filter(|s| s.is_live() && seen.insert(s.desk.clone()))
        .collect();
    let pairs: Vec<(&Session, Vec<&Task>)> = holders
        .iter()
        .map(|s| (s, open.iter().filter(|t| t.desk == s.desk).collect()))
        .collect();
    let every: Vec<&Task> = open.iter().collect();
    parts.pair.0.push(t.elapsed());
    let t = Instant::now();
    let mut by_desk: HashMap<&DeskName, Vec<&Task>> = HashMap::new();
    for task in &open {
        by_desk.entry(&task.desk).or_default().push(task);
    }
    let indexed: Vec<(&Session, Vec<&Task>)> = holders
        .iter()
        .map(|s| (s, by_desk.get(&s.desk).cloned().unwrap_or_default()))
        .collect();
    parts.pair_indexed.0.push(t.elapsed());
    if indexed != pairs {
        return Err("the indexed pairing differs".into());
    }
    let t = Instant::now();
    let plan = watchdog::plan(now, &settings, settings.reminders_paused, &pairs, &every);
    parts.plan.0.push(t.elapsed());
    if !plan.messages.is_empty() {
        return Err("the parts were timed at a moment something was due".into());
    }
    let t = Instant::now();
    let holder: HashMap<&DeskName, &Session> = holders.iter().map(|s| (&s.desk, s)).collect();
    let lines: Vec<watchdog::Timeline> = open
        .iter()
        .map(|task| {
            watchdog::timeline(
                task,
                holder.get(&task.desk).copied(),
                &settings,
                settings.reminders_paused,
                now,
            )
        })
        .collect();
    parts.timelines.0.push(t.elapsed());
    if lines.iter().any(|l| l.due.len() != 6) {
        return Err("every timeline has its five reminders and the stall to come".into());
    }
    Ok(())
}

fn main() -> Res<()> {
    let o = options()?;
    let load_before = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let dir = match &o.dir {
        Some(d) => tempfile::Builder::new()
            .prefix("watchdog-tick")
            .tempdir_in(d)?,
        None => tempfile::Builder::new().prefix("watchdog-tick").tempdir()?,
    };
    let db = dir.path().join("taskkeeper.db");

    eprintln!("building a store with {} sessions…", o.sessions);
    let began = Instant::now();
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
    let build = began.elapsed();
    let db_bytes = std::fs::metadata(&db).map(|m| m.len()).unwrap_or(0)
        + std::fs::metadata(dir.path().join("taskkeeper.db-wal"))
            .map(|m| m.len())
            .unwrap_or(0);

    // The daemon's store (synchronous=FULL) and the daemon's runtime.
    let store = Store::open(&db, StoreOptions::default())?;
    let clock = ManualClock::new(T0.plus(Duration::from_secs(60)));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (_stop, stopped) = tokio::sync::watch::channel(false);
    let notifier: Arc<dyn Notifier> = Arc::new(EventNotifier::new(None));
    let files = taskkeeper_server::files::Files::new(db.parent().unwrap_or(&db), 0);
    let tasks = Tasks::new(store.clone(), Arc::new(clock.clone()), files);
    let sessions = Sessions::new(tasks.clone(), stopped, notifier.clone());
    let dog = Watchdog::new(
        tasks,
        sessions,
        notifier,
        Arc::new(tokio::sync::Notify::new()),
    );

    // 1. Nothing due (a minute after the turns ended; the first rung is at five).
    let now = T0.plus(Duration::from_secs(60));
    let mut idle = Samples::default();
    let mut next_due = None;
    // One untimed tick warms the page cache and the prepared statements.
    runtime.block_on(dog.tick(now))?;
    let rss_before = status_kib("VmRSS");
    let peak_reset = reset_peak();
    let cpu_before = process_cpu();
    for _ in 0..o.ticks {
        let t = Instant::now();
        let (due, acted) = runtime.block_on(dog.tick(now))?;
        idle.0.push(t.elapsed());
        if acted {
            return Err("a tick acted while nothing was due".into());
        }
        next_due = due;
    }
    let ticks = u32::try_from(o.ticks)?;
    let cpu_idle = process_cpu()
        .zip(cpu_before)
        .map(|(a, b)| a.saturating_sub(b) / ticks);
    let peak = if peak_reset {
        status_kib("VmHWM")
    } else {
        None
    };
    let rss_after = status_kib("VmRSS");

    // The same plan, part by part.
    let mut p = Parts::default();
    for _ in 0..o.ticks.min(10) {
        parts(&store, now, &mut p)?;
    }

    // 2. One session due, then a hundred at once: the tick that sends, and the re-plan the
    // scheduler does right after (nothing more due at that instant).
    let mut due_rows = Vec::new();
    for (label, at, expect) in [
        ("1 reminder due", T0.plus(FIRST_RUNG), 1usize),
        (
            "100 reminders due at once",
            T0.plus(FIRST_RUNG + TURN_END_STEP * 100),
            100,
        ),
    ] {
        clock.set(at);
        let t = Instant::now();
        let (_, acted) = runtime.block_on(dog.tick(at))?;
        let sending = t.elapsed();
        let t = Instant::now();
        let (_, again) = runtime.block_on(dog.tick(at))?;
        let replan = t.elapsed();
        let recorded = store
            .sessions(None)?
            .iter()
            .filter(|s| s.watch.pending.is_some())
            .count();
        if !acted || again {
            return Err(format!("{label}: the tick did not act once and then rest").into());
        }
        due_rows.push((label, expect, recorded, sending, replan));
    }
    let load_after = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    store.close();

    let mut out = String::new();
    let first_due = next_due.map(|d| d.since(now).as_secs());
    writeln!(
        out,
        "{} sessions, each at its own desk with one delivered WORKING task, in a {:.1} MiB SQLite store \
         (built in {:.0} s through add_desk / submit / apply / put_session); the daemon's store \
         (WAL, synchronous=FULL) on the daemon's multi-thread runtime; {} timed nothing-due ticks \
         after one untimed. Load average before / after: {} / {}.",
        o.sessions,
        db_bytes as f64 / (1024.0 * 1024.0),
        build.as_secs_f64(),
        o.ticks,
        load_before
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
        load_after
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
    )?;
    writeln!(out)?;
    writeln!(out, "| one watchdog plan | p50 | p90 | min |")?;
    writeln!(out, "|---|---:|---:|---:|")?;
    let line = |out: &mut String, what: &str, s: &Samples| -> std::fmt::Result {
        writeln!(
            out,
            "| {what} | {:.1} ms | {:.1} ms | {:.1} ms |",
            s.ms(50.0),
            s.ms(90.0),
            s.ms(0.0)
        )
    };
    line(&mut out, "**`Watchdog::tick`, nothing due** (wall)", &idle)?;
    line(
        &mut out,
        "… read the open tasks (`Store::tasks`)",
        &p.read_tasks,
    )?;
    line(
        &mut out,
        "… read the sessions (`Store::sessions`)",
        &p.read_sessions,
    )?;
    line(&mut out, "… read the settings", &p.read_settings)?;
    line(
        &mut out,
        "… pick the holders, pair each with its desk's tasks",
        &p.pair,
    )?;
    line(&mut out, "… the policy (`watchdog::plan`)", &p.plan)?;
    line(
        &mut out,
        "the owner API's timelines of every open task (`watchdog::timeline`, after the same reads)",
        &p.timelines,
    )?;
    line(
        &mut out,
        "*what-if:* the same pairing through a by-desk index of the open tasks",
        &p.pair_indexed,
    )?;
    for (label, expect, recorded, sending, replan) in &due_rows {
        writeln!(
            out,
            "| `tick` with {label} ({expect} new messages recorded, {recorded} in all) | {:.1} ms | | |",
            sending.as_secs_f64() * 1000.0
        )?;
        writeln!(
            out,
            "| … the re-plan right after it (nothing more due) | {:.1} ms | | |",
            replan.as_secs_f64() * 1000.0
        )?;
    }
    writeln!(out)?;
    if let Some(cpu) = cpu_idle {
        write!(
            out,
            "Process CPU per nothing-due tick (all threads, /proc/self/stat): {:.1} ms",
            cpu.as_secs_f64() * 1000.0
        )?;
    }
    if let (Some(before), Some(after), Some(peak)) = (rss_before, rss_after, peak) {
        write!(
            out,
            "; resident set {:.1} MiB before the ticks, {:.1} MiB after, peak during them {:.1} MiB (+{:.1} MiB: what one tick materialises)",
            before as f64 / 1024.0,
            after as f64 / 1024.0,
            peak as f64 / 1024.0,
            peak.saturating_sub(before) as f64 / 1024.0
        )?;
    }
    writeln!(
        out,
        ". Next due after the nothing-due tick: {}.",
        first_due.map_or("none".to_owned(), |s| format!("in {s} s"))
    )?;
    print!("{out}");
    Ok(())
}
