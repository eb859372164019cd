//! The watchdog's policy on a simulated clock: the exact minutes of the ladder per agent
//! kind, with and without turns in between, the hourly cap, merged reminders, background
//! commands, owner waits and stops, rate limits, follow-ups, expiry, and sleep.

use std::time::Duration;

use taskkeeper_core::session::{Edge, Session, TurnOrigin};
use taskkeeper_core::settings::Settings;
use taskkeeper_core::transition::{Event, apply};
use taskkeeper_core::watchdog::{Wake, classify_wake, plan};
use taskkeeper_core::{AgentKind, Message, Task, TaskId, TaskState, Timestamp, delivery};

use crate::support::{T0, new_task};

fn min(m: f64) -> Duration {
    Duration::from_secs_f64(m * 60.0)
}

/// A session holding tasks, stepped from one due time to the next.
struct Sim {
    now: Timestamp,
    settings: Settings,
    session: Session,
    tasks: Vec<Task>,
    /// (minutes since start, what happened)
    log: Vec<(f64, String)>,
    /// After a reminder the session wakes, works this long, and stops without ending the task.
    turn_after_reminder: Option<Duration>,
}

impl Sim {
    fn new(agent: AgentKind, tasks: usize) -> Self {
        let mut session = Session::new(
            "s-1".into(),
            "web".parse().unwrap(),
            agent,
            "/src/web".into(),
            T0,
        );
        session.apply(
            Edge::TurnStarted {
                origin: TurnOrigin::Owner,
            },
            T0,
        );
        let tasks = (0..tasks)
            .map(|i| {
                let t = Task::submit(
                    TaskId::from(format!("t-{i}").as_str()),
                    new_task("web", "asker", &format!("m-{i}"), "do it"),
                    i as i64,
                    T0,
                );
                let t = apply(&t, Event::Start, T0).unwrap();
                apply(&t, Event::Delivered { to: None }, T0).unwrap()
            })
            .collect();
        session.apply(
            Edge::TurnEnded {
                last_words: Some("Now writing the probe…".into()),
                background: vec![],
            },
            T0,
        );
        Self {
            now: T0,
            settings: Settings::default(),
            session,
            tasks,
            log: Vec::new(),
            turn_after_reminder: None,
        }
    }

    fn minutes(&self) -> f64 {
        self.now.since(T0).as_secs_f64() / 60.0
    }

    /// One wake at `self.now`; returns the next due time.
    fn wake(&mut self) -> Option<Timestamp> {
        let refs: Vec<&Task> = self.tasks.iter().collect();
        let open: Vec<&Task> = self.tasks.iter().filter(|t| t.is_open()).collect();
        let p = plan(
            self.now,
            &self.settings,
            false,
            &[(&self.session, refs)],
            &open,
        );
        for id in &p.expire {
            let i = self.tasks.iter().position(|t| &t.id == id).unwrap();
            self.tasks[i] = apply(&self.tasks[i], Event::Expire, self.now).unwrap();
            self.log.push((self.minutes(), format!("expire {id}")));
        }
        let mut spoke = false;
        for m in &p.messages {
            for id in &m.remind {
                let i = self.tasks.iter().position(|t| &t.id == id).unwrap();
                self.tasks[i] = apply(&self.tasks[i], Event::Remind, self.now).unwrap();
            }
            for id in &m.stall {
                let i = self.tasks.iter().position(|t| &t.id == id).unwrap();
                self.tasks[i] = apply(&self.tasks[i], Event::Stall, self.now).unwrap();
            }
            if m.speak {
                self.session.watch.seq += 1;
                self.session.watch.sent.push(self.now);
                spoke = true;
            }
            let what = match (m.remind.is_empty(), m.stall.is_empty()) {
                (false, true) => format!(
                    "remind {}",
                    m.remind
                        .iter()
                        .map(TaskId::as_str)
                        .collect::<Vec<_>>()
                        .join(",")
                ),
                (true, false) => format!(
                    "stall {}",
                    m.stall
                        .iter()
                        .map(TaskId::as_str)
                        .collect::<Vec<_>>()
                        .join(",")
                ),
                _ => format!("remind {:?} stall {:?}", m.remind, m.stall),
            };
            self.log.push((
                self.minutes(),
                if m.speak {
                    what
                } else {
                    format!("{what} (silent)")
                },
            ));
        }
        if spoke && let Some(work) = self.turn_after_reminder {
            self.session.apply(
                Edge::TurnStarted {
                    origin: TurnOrigin::Taskkeeper,
                },
                self.now,
            );
            self.now = self.now.plus(work);
            self.session.apply(
                Edge::TurnEnded {
                    last_words: None,
                    background: vec![],
                },
                self.now,
            );
            return Some(self.now);
        }
        // After a change the scheduler plans again at once (the quiet clock moved).
        if !p.messages.is_empty() || !p.expire.is_empty() {
            return Some(self.now);
        }
        p.next_due
    }

    /// Run until nothing more is due (or `until` minutes).
    fn run(&mut self, until: f64) -> Vec<(f64, String)> {
        for _ in 0..200 {
            let Some(next) = self.wake() else { break };
            if next.since(T0).as_secs_f64() / 60.0 > until {
                break;
            }
            self.now = self.now.max(next);
        }
        self.log.clone()
    }
}

fn at(log: &[(f64, String)]) -> Vec<String> {
    log.iter().map(|(m, w)| format!("{m:.1} {w}")).collect()
}

#[test]
fn the_claude_code_ladder_is_5_6_8_13_23_and_stalls_at_53() {
    let mut sim = Sim::new(AgentKind::ClaudeCode, 1);
    let log = sim.run(600.0);
    assert_eq!(
        at(&log),
        [
            "5.0 remind t-0",
            "6.0 remind t-0",
            "8.0 remind t-0",
            "13.0 remind t-0",
            "23.0 remind t-0",
            "53.0 stall t-0"
        ]
    );
    assert_eq!(sim.tasks[0].state(), TaskState::Working);
    assert!(sim.tasks[0].stalled_at.is_some());
    assert_eq!(
        sim.wake(),
        Some(T0.plus(min(24.0 * 60.0))),
        "nothing more after the stall but the expiry"
    );
}

#[test]
fn other_agents_start_at_2_minutes() {
    let mut sim = Sim::new(AgentKind::Generic, 1);
    assert_eq!(
        at(&sim.run(600.0)),
        [
            "2.0 remind t-0",
            "3.0 remind t-0",
            "5.0 remind t-0",
            "10.0 remind t-0",
            "20.0 remind t-0",
            "50.0 stall t-0"
        ]
    );
}

#[test]
fn turns_the_reminders_start_move_the_quiet_clock_but_do_not_restart_the_ladder() {
    let mut sim = Sim::new(AgentKind::ClaudeCode, 1);
    sim.turn_after_reminder = Some(min(0.5));
    assert_eq!(
        at(&sim.run(600.0)),
        [
            "5.0 remind t-0",
            "6.5 remind t-0",
            "9.0 remind t-0",
            "14.5 remind t-0",
            "25.0 remind t-0",
            "55.5 stall t-0"
        ]
    );
}

#[test]
fn one_reminder_names_every_due_task_oldest_first_and_the_cap_holds() {
    let mut sim = Sim::new(AgentKind::ClaudeCode, 3);
    let log = sim.run(600.0);
    assert_eq!(log[0], (5.0, "remind t-0,t-1,t-2".to_owned()));
    assert_eq!(
        sim.session.watch.sent.len(),
        6,
        "six messages: five reminders and one stall note"
    );
    let text = delivery::watchdog_text(1, &sim.tasks.iter().collect::<Vec<_>>(), &[]);
    let (a, b) = (
        text.find("Task t-0").unwrap(),
        text.find("Task t-2").unwrap(),
    );
    assert!(
        a < b && text.contains("Your last words") == sim.tasks[0].last_words.is_some(),
        "{text}"
    );

    // A second ladder on the same session in the same hour: the cap holds it back.
    let mut sim = Sim::new(AgentKind::ClaudeCode, 1);
    sim.settings.set("reminders.hourly_cap", "3").unwrap();
    let log = sim.run(120.0);
    let spoken: Vec<f64> = log
        .iter()
        .filter(|(_, w)| !w.ends_with("(silent)"))
        .map(|(m, _)| *m)
        .collect();
    for w in spoken.windows(4) {
        assert!(w[3] - w[0] >= 60.0, "at most 3 in any hour: {log:?}");
    }
    assert_eq!(
        log[3].0, 65.0,
        "the fourth waits for the first to leave the hour: {log:?}"
    );
}

#[test]
fn reminder_text_carries_request_last_words_and_the_way_out() {
    let mut t = Task::submit(
        TaskId::from("t-9"),
        new_task("web", "ci-bot", "m", "Add a --json flag"),
        1,
        T0,
    );
    t = apply(&t, Event::Start, T0).unwrap();
    t = apply(
        &t,
        Event::WorkerSaid {
            text: "Now writing the probe…".into(),
        },
        T0,
    )
    .unwrap();
    let text = delivery::watchdog_text(4, &[&t], &[]);
    assert!(text.starts_with("«Taskkeeper» Reminder #4:"), "{text}");
    assert!(
        text.contains("open task. Carry on"),
        "no stray spaces: {text}"
    );
    for part in [
        "Task t-9 from ci-bot",
        "Request:\n  «Taskkeeper» Begin of ci-bot's request on task t-9, quoted",
        "\n  │ Add a --json flag\n  «Taskkeeper» End of ci-bot's request on task t-9.\n",
        "Your last words:\n  │ Now writing the probe…\n",
        "call task_update with task_id \"t-9\"",
    ] {
        assert!(text.contains(part), "{part} missing in {text}");
    }
    let note = delivery::watchdog_text(5, &[], &[&t]);
    assert!(
        note.starts_with("«Taskkeeper» Note #5: task t-9 from ci-bot is now marked stalled"),
        "{note}"
    );
}

#[test]
fn background_commands_hold_reminders_back_and_the_quiet_clock_starts_when_they_end() {
    let mut sim = Sim::new(AgentKind::ClaudeCode, 1);
    sim.session.apply(
        Edge::TurnEnded {
            last_words: None,
            background: vec!["bg-1".into()],
        },
        T0,
    );
    assert_eq!(
        sim.wake(),
        Some(T0.plus(min(24.0 * 60.0))),
        "only the expiry is due while a background command runs"
    );
    // It finishes 20 minutes later: the session wakes and stops again.
    sim.now = T0.plus(min(20.0));
    sim.session.apply(
        Edge::TurnStarted {
            origin: TurnOrigin::Background,
        },
        sim.now,
    );
    sim.session.apply(
        Edge::TurnEnded {
            last_words: None,
            background: vec![],
        },
        sim.now,
    );
    assert_eq!(sim.wake(), Some(T0.plus(min(25.0))));
}

/// A session that scheduled a wake-up for itself (Claude Code's `session_crons`) is not
/// quiet until the wake-up is due: the watchdog looks again then, and the ladder counts from
/// that moment, or from the end of the turn the wake-up started.
#[test]
fn a_wake_up_the_session_scheduled_holds_the_ladder_until_it_is_due() {
    let mut sim = Sim::new(AgentKind::ClaudeCode, 1);
    // (`session::next_wake` turns the Stop's `session_crons` into this due time.)
    let wake = Some(T0.plus(min(30.0)));
    sim.session.apply(Edge::WakeScheduled { at: wake }, T0);
    assert_eq!(
        sim.wake(),
        Some(T0.plus(min(30.0))),
        "nothing before the wake-up; look again when it is due"
    );
    sim.now = T0.plus(min(29.9));
    assert_eq!(sim.wake(), Some(T0.plus(min(30.0))), "still not quiet");
    let hold = taskkeeper_core::watchdog::timeline(
        &sim.tasks[0],
        Some(&sim.session),
        &sim.settings,
        false,
        sim.now,
    )
    .hold;
    assert_eq!(
        hold,
        Some(taskkeeper_core::watchdog::Hold::WakesItself(
            T0.plus(min(30.0))
        ))
    );
    // It did not wake (the agent was gone, or the schedule was dropped): quiet from then on.
    assert_eq!(at(&sim.run(600.0))[0], "35.0 remind t-0");

    // It woke on time, worked a minute and stopped with nothing scheduled any more.
    let mut sim = Sim::new(AgentKind::ClaudeCode, 1);
    sim.session.apply(Edge::WakeScheduled { at: wake }, T0);
    sim.now = T0.plus(min(30.0));
    sim.session.apply(
        Edge::TurnStarted {
            origin: TurnOrigin::Owner,
        },
        sim.now,
    );
    sim.now = T0.plus(min(31.0));
    sim.session.apply(
        Edge::TurnEnded {
            last_words: None,
            background: vec![],
        },
        sim.now,
    );
    sim.session.apply(Edge::WakeScheduled { at: None }, sim.now);
    assert_eq!(at(&sim.run(600.0))[0], "36.0 remind t-0");

    // A wake-up that was due long ago holds nothing.
    let mut sim = Sim::new(AgentKind::ClaudeCode, 1);
    sim.session.apply(
        Edge::WakeScheduled {
            at: Some(T0.minus(min(60.0))),
        },
        T0,
    );
    assert_eq!(at(&sim.run(600.0))[0], "5.0 remind t-0");
}

#[test]
fn waiting_on_the_owner_an_owner_stop_and_a_rate_limit_hold_the_ladder() {
    let mut sim = Sim::new(AgentKind::ClaudeCode, 1);
    sim.tasks[0] = apply(&sim.tasks[0], Event::OwnerWait { waiting: true }, T0).unwrap();
    assert_eq!(
        sim.wake(),
        Some(T0.plus(min(24.0 * 60.0))),
        "a prompt waits on the owner: never remind"
    );

    let mut sim = Sim::new(AgentKind::ClaudeCode, 1);
    sim.session.apply(
        Edge::TurnStarted {
            origin: TurnOrigin::Owner,
        },
        T0,
    );
    sim.session
        .reconcile(taskkeeper_core::session::Level::Idle, T0); // Esc
    sim.now = T0.plus(min(120.0));
    assert_eq!(
        sim.wake(),
        Some(T0.plus(min(24.0 * 60.0))),
        "stopped by the owner: nothing until someone writes to it"
    );
    sim.session.apply(
        Edge::TurnStarted {
            origin: TurnOrigin::Owner,
        },
        sim.now,
    );
    sim.session.apply(
        Edge::TurnEnded {
            last_words: None,
            background: vec![],
        },
        sim.now,
    );
    assert_eq!(sim.wake(), Some(T0.plus(min(125.0))));

    let mut sim = Sim::new(AgentKind::ClaudeCode, 1);
    sim.session.apply(
        Edge::TurnFailed {
            rate_limited_until: Some(T0.plus(min(40.0))),
        },
        T0,
    );
    assert_eq!(
        sim.wake(),
        Some(T0.plus(min(40.0))),
        "look again when the limit ends"
    );
    sim.now = T0.plus(min(40.0));
    let log = sim.run(600.0);
    assert_eq!(
        log[0],
        (40.0, "remind t-0".to_owned()),
        "overdue rungs give one message, not a burst"
    );

    let mut sim = Sim::new(AgentKind::ClaudeCode, 1);
    sim.session.watch.paused = true;
    assert_eq!(
        sim.wake(),
        Some(T0.plus(min(24.0 * 60.0))),
        "paused by the owner"
    );
}

#[test]
fn a_follow_up_restarts_the_ladder() {
    let mut sim = Sim::new(AgentKind::ClaudeCode, 1);
    sim.run(9.0);
    assert_eq!(sim.tasks[0].reminders_sent, 3);
    let t = apply(
        &sim.tasks[0],
        Event::WorkerBlocked {
            need: "Which?".into(),
        },
        sim.now,
    )
    .unwrap();
    let t = apply(
        &t,
        Event::FollowUp {
            message: Message::user_text("m-9", "NDJSON"),
        },
        sim.now,
    )
    .unwrap();
    sim.tasks[0] = t.clone();
    assert_eq!(
        sim.wake(),
        Some(T0.plus(min(24.0 * 60.0))),
        "not held until the answer is delivered"
    );
    let t = apply(&t, Event::Delivered { to: None }, sim.now).unwrap();
    assert_eq!(t.reminders_sent, 0);
    sim.tasks[0] = t;
    let start = sim.now;
    sim.session.apply(
        Edge::TurnStarted {
            origin: TurnOrigin::Taskkeeper,
        },
        start,
    );
    sim.session.apply(
        Edge::TurnEnded {
            last_words: None,
            background: vec![],
        },
        start,
    );
    assert_eq!(
        sim.wake(),
        Some(start.plus(min(5.0))),
        "the first rung again"
    );
}

#[test]
fn open_tasks_expire_after_a_day_on_the_wall_clock() {
    let mut sim = Sim::new(AgentKind::ClaudeCode, 1);
    sim.tasks[0] = apply(&sim.tasks[0], Event::WorkerBlocked { need: "?".into() }, T0).unwrap();
    assert_eq!(sim.wake(), Some(T0.plus(min(24.0 * 60.0))));
    sim.now = T0.plus(min(24.0 * 60.0));
    sim.wake();
    assert_eq!(sim.tasks[0].state(), TaskState::Canceled);
    assert!(sim.tasks[0].expired_at.is_some());
}

#[test]
fn a_suspend_moves_the_quiet_clock_and_a_clock_step_back_is_seen() {
    assert_eq!(
        classify_wake(30_000, Duration::from_secs(30), Duration::from_secs(5)),
        Wake::Normal
    );
    assert_eq!(
        classify_wake(
            3 * 3_600_000 + 30_000,
            Duration::from_secs(30),
            Duration::from_secs(5)
        ),
        Wake::Slept(Duration::from_secs(3 * 3600))
    );
    assert_eq!(
        classify_wake(-3_600_000, Duration::from_secs(30), Duration::from_secs(5)),
        Wake::ClockBack
    );

    // Quiet 4 minutes, then 3 hours asleep: the session slept too, so one minute is left.
    let mut sim = Sim::new(AgentKind::ClaudeCode, 2);
    sim.now = T0.plus(min(4.0));
    sim.session.watch.slept_ms = 3 * 3_600_000;
    sim.now = sim.now.plus(min(180.0));
    let log = sim.run(400.0);
    assert_eq!(log[0], (185.0, "remind t-0,t-1".to_owned()), "{log:?}");
    assert_eq!(
        log.iter().filter(|(m, _)| *m == 185.0).count(),
        1,
        "one message, not a burst"
    );
}

/// The timeline the owner sees is what the watchdog then does: its projection at the start
/// is the exact minutes the simulated ladder runs, with the default settings and with an
/// hourly cap that holds reminders back.
#[test]
fn the_timeline_projects_exactly_what_the_watchdog_then_does() {
    use taskkeeper_core::watchdog::{Hold, Rung, timeline};
    for cap in [6, 2] {
        let mut sim = Sim::new(AgentKind::ClaudeCode, 1);
        sim.settings.hourly_cap = cap;
        let before = timeline(&sim.tasks[0], Some(&sim.session), &sim.settings, false, T0);
        assert_eq!(before.hold, None);
        assert_eq!(before.quiet_since, Some(T0));
        let projected: Vec<String> = before
            .due
            .iter()
            .map(|s| {
                let m = s.at.since(T0).as_secs_f64() / 60.0;
                match s.rung {
                    Rung::Remind => format!("{m:.1} remind t-0"),
                    Rung::Stall => format!("{m:.1} stall t-0"),
                }
            })
            .collect();
        let log = sim.run(600.0);
        let happened: Vec<String> = at(&log)
            .into_iter()
            .map(|l| l.replace(" (silent)", ""))
            .collect();
        assert_eq!(projected, happened, "hourly cap {cap}");
        // Afterwards: every reminder it sent, the stall, nothing due.
        let after = timeline(
            &sim.tasks[0],
            Some(&sim.session),
            &sim.settings,
            false,
            sim.now,
        );
        assert_eq!(after.hold, Some(Hold::Stalled));
        assert_eq!(after.reminders.len(), before.due.len() - 1);
        assert_eq!(
            after.reminders,
            before.due[..before.due.len() - 1]
                .iter()
                .map(|s| s.at)
                .collect::<Vec<_>>()
        );
        assert_eq!(after.stalled_at, Some(before.due.last().unwrap().at));
        assert!(after.due.is_empty());
    }
}

/// Turns in between show on the timeline; a busy session holds the ladder, and so do the
/// other reasons the watchdog has for waiting.
#[test]
fn the_timeline_shows_turns_and_says_why_the_ladder_waits() {
    use taskkeeper_core::watchdog::{Hold, timeline};
    let mut sim = Sim::new(AgentKind::ClaudeCode, 1);
    sim.turn_after_reminder = Some(min(0.5));
    sim.run(9.0);
    let t = timeline(
        &sim.tasks[0],
        Some(&sim.session),
        &sim.settings,
        false,
        sim.now,
    );
    // The delivery turn ended at T0; each reminder (5, 6.5, 9) started a turn of 30 s.
    let turns: Vec<(f64, f64)> = t
        .turns
        .iter()
        .map(|x| {
            (
                x.started_at.since(T0).as_secs_f64() / 60.0,
                x.ended_at.unwrap().since(T0).as_secs_f64() / 60.0,
            )
        })
        .collect();
    assert_eq!(turns, [(0.0, 0.0), (5.0, 5.5), (6.5, 7.0), (9.0, 9.5)]);
    assert_eq!(t.reminders.len(), 3);
    assert_eq!(t.quiet_since, Some(T0.plus(min(9.5))));
    assert_eq!(
        t.due[0].at,
        T0.plus(min(14.5)),
        "the next: 5 min after the last turn"
    );

    sim.session.apply(
        Edge::TurnStarted {
            origin: TurnOrigin::Owner,
        },
        sim.now,
    );
    let busy = timeline(
        &sim.tasks[0],
        Some(&sim.session),
        &sim.settings,
        false,
        sim.now,
    );
    assert_eq!((busy.hold, busy.due.len()), (Some(Hold::Busy), 0));
    let paused = timeline(
        &sim.tasks[0],
        Some(&sim.session),
        &sim.settings,
        true,
        sim.now,
    );
    assert_eq!(paused.hold, Some(Hold::Paused));
    let alone = timeline(&sim.tasks[0], None, &sim.settings, false, sim.now);
    assert_eq!(alone.hold, Some(Hold::NoSession));
    let queued = crate::support::submitted("q", 9);
    let q = timeline(&queued, Some(&sim.session), &sim.settings, false, sim.now);
    assert_eq!(q.hold, Some(Hold::Queued));
    assert_eq!(q.expires_at, Some(T0.plus(min(24.0 * 60.0))));
}

#[test]
fn the_schedule_keeps_one_due_time_per_desk_and_hands_out_only_what_is_due() {
    use taskkeeper_core::watchdog::{COALESCE, Schedule, sleep_for};
    let t0 = crate::support::T0;
    let desk = |n: &str| n.parse::<taskkeeper_core::DeskName>().unwrap();
    let mut s = Schedule::default();
    s.set(desk("a"), Some(t0.plus(Duration::from_millis(100))));
    s.set(desk("b"), Some(t0.plus(Duration::from_millis(250))));
    s.set(desk("c"), Some(t0.plus(Duration::from_secs(60))));
    // Moved later: the old due time goes.
    s.set(desk("a"), Some(t0.plus(Duration::from_millis(200))));
    assert_eq!(s.len(), 3);
    assert_eq!(s.next(), Some(t0.plus(Duration::from_millis(200))));
    // The wake comes COALESCE after the first due time and takes both due by then.
    let sleep = sleep_for(s.next().unwrap(), t0, Duration::from_secs(30));
    assert_eq!(sleep, Duration::from_millis(200) + COALESCE);
    let woke = t0.plus(sleep);
    assert_eq!(s.due(woke), [desk("a"), desk("b")]);
    // The 30 s cap holds, and a due time passed sleeps not at all.
    assert_eq!(
        sleep_for(
            t0.plus(Duration::from_secs(600)),
            t0,
            Duration::from_secs(30)
        ),
        Duration::from_secs(30)
    );
    assert_eq!(sleep_for(t0, woke, Duration::from_secs(30)), Duration::ZERO);
    s.set(desk("a"), None);
    s.set(desk("b"), None);
    assert_eq!(s.due(woke), Vec::<taskkeeper_core::DeskName>::new());
    assert_eq!(s.len(), 1);
}
