//! The watchdog's policy at scale, on a simulated clock: 10,000 sessions, each at its own desk
//! holding one delivered WORKING task, stepped the way the scheduler steps them.
//!
//! Why it exists: the scheduler (`crates/server/src/watchdog.rs`) is event-driven, and its
//! whole cost is "how often does it wake, and what does each wake cost". design.md §6 and
//! reliability.md §8/§12 set the bars: at most 2 wake-ups a minute while nothing is due (the
//! 30 s cap), 10k sessions in < 10 MB and < 1 % of a core. This bench runs the real policy
//! ([`watchdog::plan`]) over 10k sessions and measures those numbers, plus how late reminders
//! come out of it.
//!
//! What it simulates, like the scheduler's `run` loop: at each wake it plans at `now`, carries
//! the plan out (reminders, stalls, expiries, the session's message record), plans again at
//! the same `now` while the last plan did something (at most 4 plans per wake), then sleeps
//! until `min(next_due, now + 30 s)`, or until the next session edge (a turn end wakes the
//! scheduler). The simulated clock advances during a wake by the *measured* time the wake
//! took (plus `--tick-cost-ms` per plan, see below), so lateness — when the message was
//! decided minus when its rung was due — includes the scheduler's own work.
//!
//! Phases (sessions of Claude Code, default settings: rungs at 5, 6, 8, 13, 23 min of quiet,
//! stall at 53 min, cap 6 an hour, expiry after 24 h):
//!
//! 1. **ladders** — every session's turn ends at a random millisecond of the first
//!    `--stagger-min` minutes (60), and nobody answers: every task climbs its whole ladder,
//!    5 reminders and the stall. Something is due nearly all the time.
//! 2. **stalled** — every task stalled, still open: nothing is due until the expiries a day
//!    later; `--idle-hours` (1) of it.
//! 3. **all busy** — a fresh set of sessions, every one in a turn that does not end:
//!    nothing is due; `--idle-hours` of it.
//! 4. **nothing open** — every task ended: nothing to plan for at all.
//!
//! What it does **not** measure: the real scheduler also reads every session and open task
//! from the store on each plan and writes each reminder durably. That cost is measured by
//! `crates/server/benches/watchdog_tick.rs` (one real `Watchdog::tick` over a store with
//! 10k sessions); pass its per-tick time as `--tick-cost-ms` and the ladders phase runs
//! again for each value with that much simulated time added per plan, which shows what the
//! store read does to wake-ups, lateness and the scheduler's busy time. Nor does it model the
//! other edges that wake the real scheduler (every hook of every session — each tool call —
//! changes a session and wakes it); only turn ends. `--coalesce-s` is a what-if the scheduler
//! does not do: every wake rounded up to a multiple of S seconds. Memory here is this
//! process's resident set for 10k sessions and tasks as plain structs — about what one plan of
//! the real scheduler materialises from the store (it keeps nothing between wakes).
//!
//! Run it (about 4 minutes of CPU at 10k sessions, most of it the exact ladders phase:
//! ~130k plans of ~1 ms; `--quick` for 1,000 sessions in seconds):
//!
//! ```text
//! CARGO_TARGET_DIR=/work/target cargo bench -p taskkeeper-core --bench watchdog
//! cargo bench -p taskkeeper-core --bench watchdog -- --tick-cost-ms 1100,170 --coalesce-s 1
//! ```
//!
//! It prints a markdown table for BENCHMARKS.md. Nothing here is asserted.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use taskkeeper_core::session::{Edge, TurnOrigin};
use taskkeeper_core::settings::Settings;
use taskkeeper_core::transition::apply;
use taskkeeper_core::watchdog::{self, Rung};
use taskkeeper_core::{
    AgentKind, DeskName, Event, Message, NewTask, Session, SessionId, Task, TaskId, Timestamp,
};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The scheduler's longest sleep (`taskkeeper_server::watchdog::CAP`).
const CAP: Duration = Duration::from_secs(30);
/// Plans per wake at most (the scheduler's `run` loop).
const PLANS_PER_WAKE: usize = 4;
const HOUR: Duration = Duration::from_secs(3600);
/// A fixed start, so runs are comparable.
const T0: Timestamp = Timestamp::from_millis(1_796_033_673_887);

const USAGE: &str = "usage: watchdog [--quick] [--sessions N] [--stagger-min M] [--idle-hours H] [--tick-cost-ms X,..] [--coalesce-s S,..]
  --sessions N         sessions, each at its own desk with one task (default 10000)
  --quick              1000 sessions
  --stagger-min M      turn ends spread over the first M minutes (default 60)
  --idle-hours H       simulated hours of each nothing-due phase (default 1)
  --tick-cost-ms X,..  also run the ladders phase with X ms of simulated time added per plan
                       (the real scheduler's store read, from the watchdog_tick bench)
  --coalesce-s S,..    also run the ladders phase with every wake rounded up to a multiple of
                       S seconds (a what-if: fewer wake-ups, later reminders)";

struct Options {
    sessions: usize,
    stagger: Duration,
    idle: Duration,
    tick_costs: Vec<Duration>,
    coalesce: Vec<Duration>,
}

fn num(name: &str, v: &str) -> Res<f64> {
    Ok(v.parse::<f64>().map_err(|e| format!("{name} {v}: {e}"))?)
}

fn list(name: &str, v: &str, unit_s: f64) -> Res<Vec<Duration>> {
    v.split(',')
        .map(|x| {
            x.trim()
                .parse::<f64>()
                .map(|x| Duration::from_secs_f64(x * unit_s))
                .map_err(|e| format!("{name} {v}: {e}").into())
        })
        .collect()
}

fn options() -> Res<Options> {
    let mut o = Options {
        sessions: 10_000,
        stagger: Duration::from_secs(3600),
        idle: HOUR,
        tick_costs: Vec::new(),
        coalesce: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut text = |name: &str| -> Res<String> {
            Ok(args
                .next()
                .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))?)
        };
        match a.as_str() {
            "--quick" => o.sessions = 1000,
            "--sessions" => o.sessions = num(&a, &text(&a)?)? as usize,
            "--stagger-min" => o.stagger = Duration::from_secs_f64(num(&a, &text(&a)?)? * 60.0),
            "--idle-hours" => o.idle = Duration::from_secs_f64(num(&a, &text(&a)?)? * 3600.0),
            "--tick-cost-ms" => o.tick_costs = list(&a, &text(&a)?, 0.001)?,
            "--coalesce-s" => o.coalesce = list(&a, &text(&a)?, 1.0)?,
            // cargo bench passes --bench to every bench binary.
            "--bench" => {}
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other}\n{USAGE}").into()),
        }
    }
    if o.sessions == 0 {
        return Err("--sessions must be at least 1".into());
    }
    Ok(o)
}

/// splitmix64: reproducible offsets without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

// ---- /proc readings --------------------------------------------------------------------------

/// A field of /proc/self/status in KiB (VmRSS, VmHWM).
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Start a new peak: VmHWM := VmRSS (Linux, `clear_refs` 5). False where that is refused.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// This process's CPU time (user + system), from /proc/self/stat in clock ticks (100 Hz on
/// Linux, `getconf CLK_TCK`), so to 10 ms.
fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) start at field 3.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 10))
}

// ---- the simulated world ------------------------------------------------------------------

/// Sessions and their tasks: session `i` works at desk `i` and holds task `i`.
struct World {
    settings: Settings,
    sessions: Vec<Session>,
    tasks: Vec<Task>,
    by_session: HashMap<SessionId, usize>,
    by_task: HashMap<TaskId, usize>,
    /// Turn ends still to come: (when, session), latest first (popped from the back).
    edges: Vec<(Timestamp, usize)>,
}

impl World {
    /// `n` sessions in a turn since `T0`, each holding one delivered task; `turn_ends` says
    /// when each turn ends (`None`: never).
    fn new(n: usize, turn_ends: impl Fn(usize) -> Option<Timestamp>) -> Res<World> {
        let mut w = World {
            settings: Settings::default(),
            sessions: Vec::with_capacity(n),
            tasks: Vec::with_capacity(n),
            by_session: HashMap::with_capacity(n),
            by_task: HashMap::with_capacity(n),
            edges: Vec::new(),
        };
        for i in 0..n {
            let desk: DeskName = format!("desk-{i:05}").parse()?;
            let id = SessionId::from(format!("session-{i:05}-4f1c9a2e"));
            let mut s = Session::new(
                id.clone(),
                desk.clone(),
                AgentKind::ClaudeCode,
                format!("/home/dev/src/desk-{i:05}").into(),
                T0,
            );
            s.apply(
                Edge::TurnStarted {
                    origin: TurnOrigin::Taskkeeper,
                },
                T0,
            );
            let new = NewTask {
                desk,
                asker: "planner".to_owned(),
                request: Message::user_text(
                    format!("m-{i}"),
                    "Add a --json flag to the status command and cover it with a test.",
                ),
                context_id: None,
                metadata: serde_json::Map::new(),
            };
            let t = Task::submit(TaskId::from(format!("t-{i:05}").as_str()), new, 1, T0);
            let t = apply(&t, Event::Start, T0)?;
            let t = apply(&t, Event::Delivered { to: None }, T0)?;
            if let Some(at) = turn_ends(i) {
                w.edges.push((at, i));
            }
            w.by_session.insert(id, i);
            w.by_task.insert(t.id.clone(), i);
            w.sessions.push(s);
            w.tasks.push(t);
        }
        w.edges.sort_by(|a, b| b.cmp(a));
        Ok(w)
    }

    fn next_edge(&self) -> Option<Timestamp> {
        self.edges.last().map(|e| e.0)
    }

    /// Fold in every turn end up to `now`.
    fn take_edges(&mut self, now: Timestamp) {
        while let Some(&(at, i)) = self.edges.last() {
            if at > now {
                break;
            }
            self.edges.pop();
            self.sessions[i].apply(
                Edge::TurnEnded {
                    last_words: Some("Now writing the probe for the flag…".to_owned()),
                    background: vec![],
                },
                at,
            );
        }
    }
}

/// Why the scheduler woke.
#[derive(Clone, Copy)]
enum Why {
    First,
    /// Something was due.
    Due,
    /// The 30 s cap ran out with nothing due.
    Cap,
    /// A session changed.
    Edge,
}

#[derive(Default)]
struct Phase {
    name: String,
    simulated: Duration,
    wakes_due: u64,
    wakes_cap: u64,
    wakes_edge: u64,
    plans: u64,
    /// Wake-ups per simulated minute.
    per_minute: Vec<u32>,
    reminders: u64,
    stalls: u64,
    expiries: u64,
    /// The scheduler's work (building the plan's input, planning, carrying it out), as wall
    /// time: on a loaded machine it includes time other processes had the core.
    work: Duration,
    process_cpu: Option<Duration>,
    /// Decided minus due, in ms.
    lateness: Vec<f64>,
    tick_cost: Duration,
    coalesce: Duration,
}

/// One plan at `now` over the world, carried out. Returns the next due time and whether it
/// did anything; records lateness assuming the plan's results are out at `out_at`.
fn plan_once(w: &mut World, now: Timestamp, phase: &mut Phase) -> (Option<Timestamp>, bool) {
    let pairs: Vec<(&Session, Vec<&Task>)> = w
        .sessions
        .iter()
        .zip(&w.tasks)
        .filter(|(s, t)| s.is_live() && t.is_open())
        .map(|(s, t)| (s, vec![t]))
        .collect();
    let open: Vec<&Task> = w.tasks.iter().filter(|t| t.is_open()).collect();
    let plan = watchdog::plan(now, &w.settings, false, &pairs, &open);
    drop((pairs, open));
    let acted = !plan.expire.is_empty() || !plan.messages.is_empty();
    for id in &plan.expire {
        if let Some(&i) = w.by_task.get(id)
            && let Ok(t) = apply(&w.tasks[i], Event::Expire, now)
        {
            w.tasks[i] = t;
            phase.expiries += 1;
        }
    }
    for m in &plan.messages {
        let Some(&si) = w.by_session.get(&m.session) else {
            continue;
        };
        for (ids, event) in [(&m.remind, Event::Remind), (&m.stall, Event::Stall)] {
            for id in ids {
                let Some(&ti) = w.by_task.get(id) else {
                    continue;
                };
                let due = watchdog::next_rung(&w.tasks[ti], &w.sessions[si], &w.settings);
                if let Ok(t) = apply(&w.tasks[ti], event.clone(), now) {
                    w.tasks[ti] = t;
                    match due {
                        Some((at, Rung::Remind)) => {
                            phase.reminders += 1;
                            phase.lateness.push(now.since(at).as_secs_f64() * 1000.0);
                        }
                        Some((at, Rung::Stall)) => {
                            phase.stalls += 1;
                            phase.lateness.push(now.since(at).as_secs_f64() * 1000.0);
                        }
                        None => {}
                    }
                }
            }
        }
        if m.speak {
            let watch = &mut w.sessions[si].watch;
            watch.seq += 1;
            watch.sent.retain(|t| *t > now.minus(HOUR));
            watch.sent.push(now);
        }
    }
    (plan.next_due, acted)
}

/// Run the scheduler from `start` (a wake) until `until`, or until it would sleep with
/// nothing at all to wake it, or until `done` says so.
/// `tick_cost` is simulated time added per plan; a non-zero `coalesce` rounds every wake up
/// to a multiple of it.
fn run(
    w: &mut World,
    name: &str,
    (start, until): (Timestamp, Timestamp),
    (tick_cost, coalesce): (Duration, Duration),
    done: impl Fn(&World) -> bool,
) -> (Phase, Timestamp) {
    let mut phase = Phase {
        name: name.to_owned(),
        tick_cost,
        coalesce,
        ..Phase::default()
    };
    let step = i64::try_from(coalesce.as_millis()).unwrap_or(i64::MAX);
    let round_up = |t: Timestamp| {
        if step > 1 {
            Timestamp::from_millis(t.as_millis().div_euclid(step) * step + step)
        } else {
            t
        }
    };
    let cpu_before = process_cpu();
    let mut t = start;
    let mut why = Why::First;
    loop {
        let minute = usize::try_from(t.since(start).as_secs() / 60).unwrap_or(usize::MAX);
        if phase.per_minute.len() <= minute {
            phase.per_minute.resize(minute + 1, 0);
        }
        phase.per_minute[minute] += 1;
        match why {
            Why::Due => phase.wakes_due += 1,
            Why::Cap => phase.wakes_cap += 1,
            Why::Edge => phase.wakes_edge += 1,
            Why::First => {}
        }
        w.take_edges(t);
        // A wake: plan until nothing more happens at this instant; the clock runs meanwhile.
        let began = Instant::now();
        let mut next = None;
        let mut extra = Duration::ZERO;
        for _ in 0..PLANS_PER_WAKE {
            let late_before = phase.lateness.len();
            let (due, acted) = plan_once(w, t, &mut phase);
            phase.plans += 1;
            extra += tick_cost;
            // What this plan decided goes out when its plan is done, not at `t`.
            let out_after = (began.elapsed() + extra).as_secs_f64() * 1000.0;
            for l in &mut phase.lateness[late_before..] {
                *l += out_after;
            }
            next = due;
            if !acted {
                break;
            }
        }
        let took = began.elapsed();
        phase.work += took;
        // The wake's own duration, rounded up to the store's millisecond clock.
        let took_ms = (took + extra).as_micros().div_ceil(1000);
        let clock = t.plus(Duration::from_millis(
            u64::try_from(took_ms).unwrap_or(u64::MAX),
        ));
        if done(w) {
            t = clock;
            break;
        }
        // Sleep until the next due time, at most CAP, or until a session changes.
        let timer = next.map(|due| {
            let sleep = due.since(clock);
            if sleep <= CAP {
                (round_up(clock.plus(sleep)).max(clock), Why::Due)
            } else {
                (clock.plus(CAP), Why::Cap)
            }
        });
        let edge = w.next_edge().map(|e| (round_up(e).max(clock), Why::Edge));
        let wake = match (timer, edge) {
            (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
            (a, b) => a.or(b),
        };
        match wake {
            Some((at, reason)) if at <= until => {
                t = at;
                why = reason;
            }
            _ => {
                t = until;
                break;
            }
        }
    }
    phase.simulated = t.since(start);
    phase.process_cpu = process_cpu()
        .zip(cpu_before)
        .map(|(after, before)| after.saturating_sub(before));
    (phase, t)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn fmt_ms(ms: f64) -> String {
    if ms.is_nan() {
        "—".to_owned()
    } else if ms >= 1000.0 {
        format!("{:.1} s", ms / 1000.0)
    } else {
        format!("{ms:.1} ms")
    }
}

fn row(p: &mut Phase) -> String {
    let minutes = p.simulated.as_secs_f64() / 60.0;
    let hours = p.simulated.as_secs_f64() / 3600.0;
    let wakes = p.wakes_due + p.wakes_cap + p.wakes_edge + 1;
    // Minutes with a whole minute of simulated time in them.
    let full = (p.simulated.as_secs() / 60) as usize;
    let max_minute = p.per_minute[..full.min(p.per_minute.len())]
        .iter()
        .max()
        .copied()
        .unwrap_or(0);
    let per_hour = |d: Duration| {
        if hours > 0.0 {
            d.as_secs_f64() / hours
        } else {
            f64::NAN
        }
    };
    // The scheduler's busy time: its measured work plus the simulated store cost per plan.
    let plans = u32::try_from(p.plans).unwrap_or(u32::MAX);
    let work_h = per_hour(p.work + p.tick_cost * plans);
    p.lateness.sort_by(f64::total_cmp);
    let mut cost = String::new();
    if !p.tick_cost.is_zero() {
        cost = format!(" (+{} ms per plan)", p.tick_cost.as_millis());
    }
    if !p.coalesce.is_zero() {
        cost = format!(" (wakes rounded up to {} s)", p.coalesce.as_secs_f64());
    }
    format!(
        "| {}{cost} | {:.0} min | {wakes} ({} due, {} edge, {} cap) / {} | {:.1} / {max_minute} | {} + {} | {:.2} s ({:.3} %) | {} | {} / {} / {} |",
        p.name,
        minutes,
        p.wakes_due,
        p.wakes_edge,
        p.wakes_cap,
        p.plans,
        wakes as f64 / minutes.max(1.0 / 60.0),
        p.reminders,
        p.stalls,
        work_h,
        work_h / 36.0,
        p.process_cpu
            .map(|c| format!("{:.2} s ({:.3} %)", per_hour(c), per_hour(c) / 36.0))
            .unwrap_or_else(|| "—".to_owned()),
        fmt_ms(percentile(&p.lateness, 50.0)),
        fmt_ms(percentile(&p.lateness, 99.0)),
        fmt_ms(p.lateness.last().copied().unwrap_or(f64::NAN)),
    )
}

fn all_stalled(w: &World) -> bool {
    w.tasks
        .iter()
        .all(|t| t.stalled_at.is_some() || !t.is_open())
}

/// The ladders phase, then (optionally) the stalled phase on the same world.
fn ladders(o: &Options, costs: (Duration, Duration), then_idle: bool) -> Res<(Vec<Phase>, Memory)> {
    let rss_before = status_kib("VmRSS");
    let peak_reset = reset_peak();
    let mut rng = Rng(0x7A5C_0FFE_E000_0001);
    let stagger_ms = u64::try_from(o.stagger.as_millis())
        .unwrap_or(u64::MAX)
        .max(1);
    let offsets: Vec<u64> = (0..o.sessions).map(|_| rng.next() % stagger_ms).collect();
    let mut w = World::new(o.sessions, |i| {
        Some(T0.plus(Duration::from_millis(offsets[i])))
    })?;
    let rss_built = status_kib("VmRSS");
    let day = T0.plus(Duration::from_secs(24 * 3600));
    let (a, t) = run(&mut w, "ladders", (T0, day), costs, all_stalled);
    let mut phases = vec![a];
    if then_idle {
        let (b, _) = run(&mut w, "stalled", (t, t.plus(o.idle)), costs, |_| false);
        phases.push(b);
    }
    let memory = Memory {
        before: rss_before,
        built: rss_built,
        peak: if peak_reset {
            status_kib("VmHWM")
        } else {
            None
        },
    };
    drop(w);
    Ok((phases, memory))
}

struct Memory {
    before: Option<u64>,
    built: Option<u64>,
    peak: Option<u64>,
}

fn main() -> Res<()> {
    let o = options()?;
    let started = Instant::now();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    eprintln!(
        "simulating {} sessions (ladders, stalled, all busy, nothing open)…",
        o.sessions
    );

    let exact = (Duration::ZERO, Duration::ZERO);
    let (mut phases, memory) = ladders(&o, exact, true)?;

    // All busy: turns that never end.
    let mut busy = World::new(o.sessions, |_| None)?;
    let (c, _) = run(&mut busy, "all busy", (T0, T0.plus(o.idle)), exact, |_| {
        false
    });
    phases.push(c);
    drop(busy);

    // Nothing open: every task ended (a plan at each change, then nothing).
    let mut ended = World::new(o.sessions, |_| Some(T0))?;
    ended.take_edges(T0);
    for t in &mut ended.tasks {
        *t = apply(
            t,
            Event::WorkerDone {
                summary: "Done.".to_owned(),
            },
            T0,
        )?;
    }
    let (d, _) = run(
        &mut ended,
        "nothing open",
        (T0, T0.plus(o.idle)),
        exact,
        |_| false,
    );
    phases.push(d);
    drop(ended);

    let variants = o.tick_costs.iter().map(|c| (*c, Duration::ZERO));
    for costs in variants.chain(o.coalesce.iter().map(|c| (Duration::ZERO, *c))) {
        eprintln!(
            "the ladders again, with {} ms per plan for the store read, wakes rounded to {} s…",
            costs.0.as_millis(),
            costs.1.as_secs_f64()
        );
        let (more, _) = ladders(&o, costs, false)?;
        phases.extend(more);
    }
    let load_after = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();

    let mut out = String::new();
    writeln!(
        out,
        "{} sessions of Claude Code, each at its own desk holding one delivered WORKING task; default settings \
         (rungs at 5, 6, 8, 13, 23 min of quiet, stall at 53, cap 6/h, expiry 24 h); turn ends at random \
         milliseconds of the first {:.0} min; scheduler: plan, carry out, re-plan while acting (≤ {PLANS_PER_WAKE}), \
         sleep until min(next due, now + {} s) or the next turn end. Load average before / after: {} / {}.",
        o.sessions,
        o.stagger.as_secs_f64() / 60.0,
        CAP.as_secs(),
        load.split_whitespace()
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
    writeln!(
        out,
        "| phase | simulated | wake-ups (why) / plans | wake-ups per min, mean / max | reminders + stalls | scheduler busy per simulated hour, wall (% of a core) | process CPU per simulated hour (% of a core) | lateness p50 / p99 / max |"
    )?;
    writeln!(out, "|---|---:|---|---:|---:|---:|---:|---:|")?;
    for p in &mut phases {
        writeln!(out, "{}", row(p))?;
    }
    writeln!(out)?;
    let mib = |kib: u64| kib as f64 / 1024.0;
    match (memory.before, memory.built, memory.peak) {
        (Some(before), Some(built), peak) => {
            let per = (built.saturating_sub(before)) as f64 * 1024.0 / o.sessions as f64;
            write!(
                out,
                "Memory (VmRSS of this process): {:.1} MiB before, {:.1} MiB with the {} sessions and tasks built \
                 (+{:.1} MiB, {per:.0} B per session with its task)",
                mib(before),
                mib(built),
                o.sessions,
                mib(built.saturating_sub(before)),
            )?;
            if let Some(peak) = peak {
                write!(
                    out,
                    "; peak during ladders + stalled (VmHWM) {:.1} MiB (+{:.1} MiB over before)",
                    mib(peak),
                    mib(peak.saturating_sub(before))
                )?;
            }
            writeln!(out, ".")?;
        }
        _ => writeln!(out, "Memory: /proc/self/status is not readable here.")?,
    }
    writeln!(
        out,
        "Lateness = when the plan that decided the message finished − when its rung was due. \
         The run took {:.0} s of wall time.",
        started.elapsed().as_secs_f64()
    )?;
    print!("{out}");
    Ok(())
}
