//! Store transitions per second, beside raw SQLite doing one-row transactions.
//!
//! Why it exists: every task change in Taskkeeper is one durable transition that returns only
//! after the commit that made it durable (design.md §5, reliability.md §3–§4). That puts
//! an fsync on the path of every A2A call, so the store's throughput and latency are worth
//! knowing, and worth knowing *relative to* what SQLite itself does on the same disk with the
//! same pragmas: absolute numbers change from machine to machine, the ratio says what our layer
//! (the writer thread, group commit, JSON bodies, the queue check in each transaction) costs or
//! saves.
//!
//! For each `synchronous` setting (FULL, NORMAL) and each number of concurrent writer threads
//! (1, 16) it runs two cells on a fresh database:
//!
//! - **ours**: each writer thread owns a desk and loops over a realistic mix of transitions
//!   through [`Store::submit`] and [`Store::apply`] (submit, then done; submit, remind, done;
//!   submit, blocked, answer, done; submit, cancel). Every call is timed.
//! - **raw**: each writer thread has its own rusqlite connection (WAL, the same `synchronous`,
//!   `busy_timeout`) and inserts one row per `BEGIN IMMEDIATE; INSERT; COMMIT` into a table
//!   shaped like the store's `tasks` table, with bodies as long as ours on average.
//!
//! The average group size (writes per commit) is read from the commit counter SQLite keeps in
//! the WAL index (`iChange`, bytes 8..12 of the `-shm` file, see sqlite.org/walformat.html),
//! so the store code needs no instrumentation; raw SQLite must show exactly 1.00.
//!
//! Run it (about 30 s after the build; `-- --quick` for a smoke run of 0.2 s per cell):
//!
//! ```text
//! CARGO_TARGET_DIR=/work/target cargo bench -p taskkeeper-core --bench store
//! cargo bench -p taskkeeper-core --bench store -- --seconds 5 --dir /var/tmp
//! ```
//!
//! It prints a markdown table for BENCHMARKS.md. Nothing here is asserted: numbers are
//! reported, never tested.

use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use rusqlite::{Connection, params};
use taskkeeper_core::store::{NewDesk, Synchronous};
use taskkeeper_core::{
    AgentKind, Clock, DeskName, Event, Message, NewTask, Store, StoreOptions, SystemClock, Task,
    TaskId, TaskState, transition,
};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Res<T> = Result<T, BoxError>;

const USAGE: &str = "usage: store [--quick] [--seconds S] [--dir PATH]
  --quick      a smoke run: 0.2 s per cell
  --seconds S  length of each cell (default 3)
  --dir PATH   where the temporary databases go (default: cargo's target tmp dir); use a real disk, not tmpfs";

const WRITER_COUNTS: [usize; 2] = [1, 16];
const SYNCS: [Synchronous; 2] = [Synchronous::Full, Synchronous::Normal];

struct Options {
    cell: Duration,
    base: PathBuf,
}

fn parse_args() -> Res<Options> {
    let mut cell = Duration::from_secs(3);
    let mut base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            // cargo bench passes --bench to every bench binary.
            "--bench" => {}
            "--quick" => cell = Duration::from_millis(200),
            "--seconds" => {
                let s: f64 = args.next().ok_or(USAGE)?.parse().map_err(|_| USAGE)?;
                cell = Duration::try_from_secs_f64(s).map_err(|_| USAGE)?;
            }
            "--dir" => base = PathBuf::from(args.next().ok_or(USAGE)?),
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}").into()),
        }
    }
    Ok(Options { cell, base })
}

fn main() -> Res<()> {
    let opts = parse_args()?;
    fs::create_dir_all(&opts.base)?;
    let tmp = tempfile::Builder::new()
        .prefix("taskkeeper-store-bench-")
        .tempdir_in(&opts.base)?;
    let dir = tmp.path();

    let (fs_type, device) = filesystem_of(dir);
    if fs_type == "tmpfs" || fs_type == "ramfs" {
        eprintln!(
            "warning: {} is on {fs_type}; fsyncs cost nothing there, pass --dir on a real disk",
            dir.display()
        );
    }
    let load_before = loadavg();
    let probe_budget = (opts.cell / 4).max(Duration::from_millis(100));
    let probe_before = fsync_probe(dir, probe_budget)?;
    let (body_len, sample_body) = mean_body()?;

    let mut rows = Vec::new();
    for sync in SYNCS {
        for writers in WRITER_COUNTS {
            eprintln!("running {} x{writers} ...", sync_name(sync));
            let ours = run_ours(dir, sync, writers, opts.cell)?;
            let raw = run_raw(
                dir,
                sync,
                writers,
                opts.cell,
                &body_len_body(&sample_body, body_len),
            )?;
            rows.push((sync, writers, ours, raw));
        }
    }
    let load_after = loadavg();
    // A second probe shows whether the disk was disturbed while the cells ran.
    let probe_after = fsync_probe(dir, probe_budget)?;

    let mut out = String::new();
    writeln!(out, "- CPUs: {} ({})", cpus(), cpu_model())?;
    writeln!(
        out,
        "- temp dir: `{}` on {fs_type} ({device})",
        opts.base.display()
    )?;
    writeln!(
        out,
        "- fdatasync after a 4 KiB overwrite, before the cells: {}; after them: {}",
        probe_before, probe_after
    )?;
    writeln!(
        out,
        "- load average (1/5/15 min) before: {load_before}; after: {load_after}"
    )?;
    writeln!(
        out,
        "- {} per cell; mean task body {body_len} B; SQLite {}",
        fmt_dur(opts.cell),
        rusqlite::version()
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "| synchronous | writers | ours: transitions/s | p50 | p99 | writes/commit | raw: inserts/s | p50 | p99 | writes/commit | ours / raw |"
    )?;
    writeln!(
        out,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    )?;
    for (sync, writers, ours, raw) in &rows {
        writeln!(
            out,
            "| {} | {writers} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2}× |",
            sync_name(*sync),
            fmt_rate(ours.rate()),
            fmt_dur(ours.percentile(50)),
            fmt_dur(ours.percentile(99)),
            ours.group().map_or("n/a".into(), |g| format!("{g:.2}")),
            fmt_rate(raw.rate()),
            fmt_dur(raw.percentile(50)),
            fmt_dur(raw.percentile(99)),
            raw.group().map_or("n/a".into(), |g| format!("{g:.2}")),
            ours.rate() / raw.rate(),
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "Steadiness (calls/s in the first and second half of each cell; a drop means the cell slowed as its table grew):"
    )?;
    writeln!(out)?;
    for (sync, writers, ours, raw) in &rows {
        writeln!(
            out,
            "- {} ×{writers}: ours {} → {}, raw {} → {}",
            sync_name(*sync),
            fmt_rate(ours.first_half_rate()),
            fmt_rate(ours.second_half_rate()),
            fmt_rate(raw.first_half_rate()),
            fmt_rate(raw.second_half_rate()),
        )?;
    }
    print!("{out}");
    drop(tmp);
    Ok(())
}

// ---- one cell ------------------------------------------------------------------------

/// What one cell measured.
struct Run {
    /// Every call's latency in nanoseconds, sorted.
    latencies: Vec<u64>,
    elapsed: Duration,
    /// Calls that finished in the first half of the cell.
    first_half: u64,
    half: Duration,
    /// Commits SQLite counted during the cell, when the WAL index could be read.
    commits: Option<u64>,
}

/// What one writer thread measured.
struct Sample {
    latencies: Vec<u64>,
    first_half: u64,
}

impl Sample {
    fn new() -> Self {
        Self {
            latencies: Vec::with_capacity(1 << 14),
            first_half: 0,
        }
    }

    fn record(&mut self, started: Instant, midpoint: Instant) {
        let now = Instant::now();
        self.latencies
            .push(u64::try_from(now.duration_since(started).as_nanos()).unwrap_or(u64::MAX));
        if now < midpoint {
            self.first_half += 1;
        }
    }
}

impl Run {
    fn calls(&self) -> u64 {
        self.latencies.len() as u64
    }

    fn rate(&self) -> f64 {
        self.calls() as f64 / self.elapsed.as_secs_f64()
    }

    fn first_half_rate(&self) -> f64 {
        self.first_half as f64 / self.half.as_secs_f64()
    }

    fn second_half_rate(&self) -> f64 {
        (self.calls() - self.first_half) as f64
            / (self.elapsed.saturating_sub(self.half)).as_secs_f64()
    }

    fn percentile(&self, p: usize) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let i = (self.latencies.len() * p / 100).min(self.latencies.len() - 1);
        Duration::from_nanos(self.latencies[i])
    }

    fn group(&self) -> Option<f64> {
        self.commits
            .filter(|&c| c > 0)
            .map(|c| self.calls() as f64 / c as f64)
    }
}

/// Run `writers` threads of `work` for `cell`, all starting together; `work` gets its writer
/// number, the deadline and the midpoint of the cell.
fn run_cell<S>(
    writers: usize,
    cell: Duration,
    setup: impl Fn(usize) -> Res<S> + Sync,
    work: impl Fn(usize, S, Instant, Instant) -> Res<Sample> + Sync,
) -> Res<Run> {
    let barrier = Barrier::new(writers + 1);
    let (samples, start, end) = thread::scope(|scope| {
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let (barrier, setup, work) = (&barrier, &setup, &work);
                scope.spawn(move || {
                    // Connections are opened before the clock starts; a failed setup still
                    // waits at the barrier so the others are not left hanging.
                    let state = setup(w);
                    barrier.wait();
                    let start = Instant::now();
                    work(w, state?, start + cell, start + cell / 2)
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let samples: Vec<Res<Sample>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a writer thread panicked".into()))
            })
            .collect();
        (samples, start, Instant::now())
    });
    let mut latencies = Vec::new();
    let mut first_half = 0;
    for s in samples {
        let s = s?;
        latencies.extend(s.latencies);
        first_half += s.first_half;
    }
    latencies.sort_unstable();
    Ok(Run {
        latencies,
        elapsed: end.duration_since(start),
        first_half,
        half: cell / 2,
        commits: None,
    })
}

// ---- ours ----------------------------------------------------------------------------

/// One step of a writer's script; each is one durable call.
#[derive(Clone, Copy)]
enum Step {
    Submit,
    Remind,
    Blocked,
    Answer,
    Done,
    Cancel,
}

/// The transition mix, one line per task, cycled: 11 transitions per 4 tasks.
const SCRIPT: [&[Step]; 4] = [
    &[Step::Submit, Step::Done],
    &[Step::Submit, Step::Remind, Step::Done],
    &[Step::Submit, Step::Blocked, Step::Answer, Step::Done],
    &[Step::Submit, Step::Cancel],
];

const REQUEST: &str = "The integration test `queue::a_desk_works_on_one_task_at_a_time` fails on main since \
    the last merge; find out why, fix it without weakening the test, and tell me what the cause was.";

fn new_task(desk: &DeskName, writer: usize, n: u64) -> NewTask {
    NewTask {
        desk: desk.clone(),
        asker: format!("asker-{writer}"),
        request: Message::user_text(format!("m-{writer}-{n}"), REQUEST),
        context_id: None,
        metadata: Default::default(),
    }
}

fn event(step: Step, n: u64) -> Option<Event> {
    Some(match step {
        Step::Submit => return None,
        Step::Remind => Event::Remind,
        Step::Blocked => Event::WorkerBlocked {
            need: "Should the fix keep the old queue order for tasks submitted in the same millisecond?".into(),
        },
        Step::Answer => Event::FollowUp {
            message: Message::user_text(format!("a-{n}"), "Yes, keep it: order by queue_seq, then by id."),
        },
        Step::Done => Event::WorkerDone {
            summary: "Fixed: the queue compared timestamps instead of queue_seq. Added a regression test; \
                      all tests pass."
                .into(),
        },
        Step::Cancel => Event::Cancel { reason: Some("Not needed any more.".into()) },
    })
}

fn desk_name(writer: usize) -> Res<DeskName> {
    Ok(format!("bench-{writer}").parse()?)
}

fn run_ours(dir: &Path, sync: Synchronous, writers: usize, cell: Duration) -> Res<Run> {
    let path = dir.join(format!("ours-{}-{writers}.db", sync_name(sync)));
    let store = Store::open(
        &path,
        StoreOptions {
            synchronous: sync,
            readers: 1,
        },
    )?;
    for w in 0..writers {
        let desk = NewDesk {
            name: desk_name(w)?,
            agent: AgentKind::Generic,
            dir: dir.to_owned(),
            deliver_command: None,
        };
        store.add_desk(desk, SystemClock.now())?;
    }
    let before = commit_counter(&path);
    let mut run = run_cell(writers, cell, desk_name, |w, desk, deadline, midpoint| {
        let mut sample = Sample::new();
        let mut task_id: Option<TaskId> = None;
        for n in 0u64.. {
            for &step in SCRIPT[(n % SCRIPT.len() as u64) as usize] {
                if Instant::now() >= deadline {
                    return Ok(sample);
                }
                let started = Instant::now();
                let changed = match (event(step, n), &task_id) {
                    (None, _) => store.submit(new_task(&desk, w, n), SystemClock.now())?,
                    (Some(ev), Some(id)) => store.apply(id, ev, SystemClock.now())?,
                    (Some(_), None) => {
                        return Err("the script applies an event before any submit".into());
                    }
                };
                sample.record(started, midpoint);
                if !changed.changed {
                    return Err(format!("task {} did not change", changed.task.id).into());
                }
                if matches!(step, Step::Submit) {
                    // The writer's desk is free, so a new task must start at once.
                    if changed.task.state() != TaskState::Working {
                        return Err(format!("task {} did not start", changed.task.id).into());
                    }
                    task_id = Some(changed.task.id);
                }
            }
        }
        Ok(sample)
    })?;
    run.commits = delta(before, commit_counter(&path));
    drop(store);
    remove_db(&path);
    Ok(run)
}

/// The mean length of the task bodies the script writes, and one real body to size raw rows on.
fn mean_body() -> Res<(usize, String)> {
    let desk = desk_name(0)?;
    let now = SystemClock.now();
    let (mut total, mut count) = (0usize, 0usize);
    let mut sample = String::new();
    for (n, steps) in SCRIPT.iter().enumerate() {
        let mut task: Option<Task> = None;
        for &step in *steps {
            let next = match (event(step, n as u64), task.take()) {
                (None, _) => {
                    let t = Task::submit(TaskId::generate(), new_task(&desk, 0, n as u64), 1, now);
                    transition::apply(&t, Event::Start, now)?
                }
                (Some(ev), Some(t)) => transition::apply(&t, ev, now)?,
                (Some(_), None) => {
                    return Err("the script applies an event before any submit".into());
                }
            };
            let body = serde_json::to_string(&next)?;
            total += body.len();
            count += 1;
            if sample.is_empty() {
                sample = body;
            }
            task = Some(next);
        }
    }
    Ok((total / count.max(1), sample))
}

// ---- raw SQLite ----------------------------------------------------------------------

/// Shaped like the store's `tasks` table (schema V1), indexes included.
const RAW_SCHEMA: &str = "
CREATE TABLE tasks (
    id                  TEXT PRIMARY KEY,
    desk                TEXT NOT NULL,
    asker               TEXT NOT NULL,
    request_message_id  TEXT NOT NULL,
    context_id          TEXT NOT NULL,
    state               TEXT NOT NULL,
    queue_seq           INTEGER NOT NULL,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    ended_at            INTEGER,
    version             INTEGER NOT NULL,
    body                TEXT NOT NULL,
    UNIQUE (asker, request_message_id)
) STRICT;
CREATE INDEX tasks_open_by_desk ON tasks (desk, queue_seq) WHERE ended_at IS NULL;
CREATE INDEX tasks_ended ON tasks (ended_at) WHERE ended_at IS NOT NULL;
CREATE INDEX tasks_context ON tasks (context_id);
";

/// A body of exactly `len` bytes made from a real task body (SQLite does not compress, so
/// only the length matters; real text keeps the file honest to look at).
fn body_len_body(sample: &str, len: usize) -> String {
    sample
        .chars()
        .filter(char::is_ascii)
        .cycle()
        .take(len)
        .collect()
}

fn raw_connection(path: &Path, sync: Synchronous) -> rusqlite::Result<Connection> {
    let c = Connection::open(path)?;
    c.busy_timeout(Duration::from_secs(5))?;
    c.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))?;
    c.execute_batch(&format!(
        "PRAGMA synchronous = {}; PRAGMA foreign_keys = ON; PRAGMA journal_size_limit = 67108864;",
        sync_name(sync)
    ))?;
    #[cfg(target_os = "macos")]
    c.execute_batch("PRAGMA fullfsync = ON; PRAGMA checkpoint_fullfsync = ON;")?;
    Ok(c)
}

fn run_raw(dir: &Path, sync: Synchronous, writers: usize, cell: Duration, body: &str) -> Res<Run> {
    let path = dir.join(format!("raw-{}-{writers}.db", sync_name(sync)));
    // Kept open through the cell so the WAL index (and its commit counter) stays put.
    let setup = raw_connection(&path, sync)?;
    setup.execute_batch(RAW_SCHEMA)?;
    let before = commit_counter(&path);
    let mut run = run_cell(
        writers,
        cell,
        |_| Ok(raw_connection(&path, sync)?),
        |w, conn, deadline, midpoint| {
            let mut sample = Sample::new();
            let mut insert = conn.prepare(
                "INSERT INTO tasks (id, desk, asker, request_message_id, context_id, state, queue_seq, created_at, \
                 updated_at, ended_at, version, body) VALUES (?1, ?2, ?3, ?4, ?5, 'working', ?6, ?7, ?7, NULL, 2, ?8)",
            )?;
            let (desk, asker) = (format!("bench-{w}"), format!("asker-{w}"));
            for n in 0u64.. {
                if Instant::now() >= deadline {
                    break;
                }
                let id = format!("{w:08x}-0000-4000-8000-{n:012x}");
                let started = Instant::now();
                conn.execute_batch("BEGIN IMMEDIATE")?;
                let now = SystemClock.now().as_millis();
                let seq = i64::try_from(n)?;
                insert.execute(params![
                    id,
                    desk,
                    asker,
                    format!("m-{w}-{n}"),
                    id,
                    seq,
                    now,
                    body
                ])?;
                conn.execute_batch("COMMIT")?;
                sample.record(started, midpoint);
            }
            Ok(sample)
        },
    )?;
    run.commits = delta(before, commit_counter(&path));
    drop(setup);
    remove_db(&path);
    Ok(run)
}

// ---- observing SQLite and the machine ------------------------------------------------

/// SQLite's count of committed transactions on this database, from the WAL-index header in
/// the `-shm` file (`iChange`, a native-endian u32 at byte 8). `None` if it cannot be read.
fn commit_counter(db: &Path) -> Option<u32> {
    let mut name = db.file_name()?.to_os_string();
    name.push("-shm");
    let mut header = [0u8; 12];
    File::open(db.with_file_name(name))
        .ok()?
        .read_exact(&mut header)
        .ok()?;
    Some(u32::from_ne_bytes([
        header[8], header[9], header[10], header[11],
    ]))
}

fn delta(before: Option<u32>, after: Option<u32>) -> Option<u64> {
    Some(u64::from(after?.wrapping_sub(before?)))
}

fn remove_db(path: &Path) {
    for suffix in ["", "-wal", "-shm", ".lock"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let _ = fs::remove_file(PathBuf::from(name));
    }
}

struct Probe {
    p50: Duration,
    mean: Duration,
    samples: usize,
}

impl std::fmt::Display for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "p50 {}, mean {} ({} samples)",
            fmt_dur(self.p50),
            fmt_dur(self.mean),
            self.samples
        )
    }
}

/// Time `fdatasync` after overwriting 4 KiB of a 1 MiB file, for `budget`: about what one
/// WAL commit at synchronous=FULL costs the disk.
fn fsync_probe(dir: &Path, budget: Duration) -> Res<Probe> {
    let path = dir.join("fsync-probe");
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)?;
    file.write_all(&vec![0u8; 1 << 20])?;
    file.sync_all()?;
    let block = [0x5au8; 4096];
    let mut times = Vec::new();
    let end = Instant::now() + budget;
    let mut i = 0u64;
    while Instant::now() < end || times.len() < 10 {
        file.seek(SeekFrom::Start((i % 256) * 4096))?;
        file.write_all(&block)?;
        let started = Instant::now();
        file.sync_data()?;
        times.push(started.elapsed());
        i += 1;
    }
    drop(file);
    let _ = fs::remove_file(&path);
    times.sort_unstable();
    let total: Duration = times.iter().sum();
    let samples = times.len();
    Ok(Probe {
        p50: times[samples / 2],
        mean: total / u32::try_from(samples)?,
        samples,
    })
}

/// The filesystem type and device holding `dir`, from /proc/mounts (Linux only).
fn filesystem_of(dir: &Path) -> (String, String) {
    let unknown = || ("unknown filesystem".to_owned(), "unknown device".to_owned());
    let (Ok(dir), Ok(mounts)) = (dir.canonicalize(), fs::read_to_string("/proc/mounts")) else {
        return unknown();
    };
    mounts
        .lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let (device, point, fs_type) = (f.next()?, f.next()?, f.next()?);
            dir.starts_with(point)
                .then(|| (point.len(), fs_type.to_owned(), device.to_owned()))
        })
        .max_by_key(|(len, _, _)| *len)
        .map_or_else(unknown, |(_, fs_type, device)| (fs_type, device))
}

fn cpus() -> usize {
    thread::available_parallelism().map_or(0, |n| n.get())
}

fn cpu_model() -> String {
    fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU model".to_owned())
}

fn loadavg() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

// ---- formatting ----------------------------------------------------------------------

fn sync_name(sync: Synchronous) -> &'static str {
    match sync {
        Synchronous::Full => "FULL",
        Synchronous::Normal => "NORMAL",
    }
}

fn fmt_dur(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.0} µs")
    } else if us < 1e6 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{:.1} s", us / 1e6)
    }
}

/// A rate with thousands separators: 12,345.
fn fmt_rate(r: f64) -> String {
    let digits = format!("{:.0}", r.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}
