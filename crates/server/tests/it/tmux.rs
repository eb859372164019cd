//! The tmux paste against real shells (issue 24). A pane of the session's own has a shell
//! behind the agent: the paste and its Enter go only to the session's own process while it is
//! in front of the pane's terminal, never to the shell once the agent is suspended (Ctrl-Z)
//! nor to an editor or pager in front of it; the lines Taskkeeper writes begin with nothing a
//! shell acts on; and sessions pasted into at once each get their own text, through a tmux
//! buffer of their own that is gone afterwards.
//!
//! Real tmux servers on private sockets (killed on drop), real bash in the panes, a `cat`
//! standing in for the agent. "Nothing was pasted" is concluded from signals, never a pause:
//! the refusal shown on the session (or the desk's command delivering instead), and a
//! sentinel typed afterwards that the shell (or the editor) has taken in.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;
use taskkeeper_core::clock::Timestamp;
use taskkeeper_core::delivery;
use taskkeeper_core::task::{Message, NewTask, Part, PartContent, Task, TaskId};
use taskkeeper_core::transition::{Event, apply};

use crate::hooks::Hooks;
use crate::support::{TestDaemon, read, until};
use crate::terminal::{Tmux, delivered, reach, recorder, shell_ran_nothing_of_it, web_desk};

/// An interactive bash in a new tmux session `name` of `tmux` (no rc files, no history
/// file), once its prompt shows; its pane.
fn bash(tmux: &Tmux, name: &str) -> String {
    let pane = tmux.pane(
        name,
        "env HISTFILE=/dev/null PS1='ready$ ' bash --norc --noprofile -i",
    );
    until("bash's prompt", || {
        tmux.run(&["capture-pane", "-p", "-t", &pane])
            .contains("ready$")
            .then_some(())
    });
    pane
}

/// Fields of `/proc/PID/stat` after the name: the state is the first, the process group the
/// third, the terminal's foreground group the sixth.
fn stat(pid: u32) -> Vec<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let (_, rest) = text.rsplit_once(')').unwrap();
    rest.split_whitespace().map(str::to_owned).collect()
}

/// Starts `cat > record` from the shell in `pane`, as a job of its own in front of the
/// pane's terminal (an agent started from a shell, or an editor an agent runs); its pid.
fn start_job(tmux: &Tmux, pane: &str, dir: &Path, name: &str) -> (u32, PathBuf) {
    let (pid_file, record) = (dir.join(format!("{name}.pid")), dir.join(name));
    tmux.type_line(
        pane,
        &format!(
            "sh -c 'echo $$ > \"$1\"; exec cat > \"$2\"' sh '{}' '{}'",
            pid_file.display(),
            record.display()
        ),
    );
    let pid: u32 = until("the job's pid", || {
        read(&pid_file).and_then(|p| p.trim().parse().ok())
    });
    until("the job in front of the terminal", || {
        let s = stat(pid);
        (s[2] == pid.to_string() && s[5] == pid.to_string() && s[0] != "T").then_some(())
    });
    (pid, record)
}

/// A desk `web` at the hooks' directory with no command: a task waits for the session.
fn bare_desk(d: &TestDaemon, h: &Hooks<'_>) {
    std::fs::create_dir_all(&h.cwd).unwrap();
    let (status, desk) = d.call(
        "POST",
        "/api/desks",
        Some(&json!({"name": "web", "dir": h.cwd})),
    );
    assert_eq!(status, 201, "{desk}");
}

/// The agent, started from bash in the session's pane, is suspended with Ctrl-Z: bash is in
/// front again. Nothing is pasted and no Enter pressed (no line of the task runs in bash, and
/// the agent gets nothing), the refusal is shown on the session naming who is in front, and
/// the task waits.
#[test]
fn a_suspended_agent_gets_nothing_and_the_shell_in_front_of_it_runs_nothing() {
    let d = TestDaemon::start();
    let h = Hooks::new(&d);
    bare_desk(&d, &h);
    let tmux = Tmux::new(&d.data_dir);
    let pane = bash(&tmux, "cc");
    let (pid, record) = start_job(&tmux, &pane, &d.data_dir, "agent");
    tmux.run(&["send-keys", "-t", &pane, "C-z"]);
    until("the agent suspended and bash in front", || {
        let s = stat(pid);
        let shell = tmux.pane_pid(&pane).to_string();
        (s[0] == "T" && s[5] == shell).then_some(())
    });
    let (status, _) = h.send(
        "s-1",
        "SessionStart",
        json!({"source": "startup"}),
        &reach(&tmux, &pane, Some(pid)),
    );
    assert_eq!(status, 200);

    let marker = d.data_dir.join("pwned");
    let (file, touch) = (d.data_dir.join("FILE"), d.data_dir.join("touch"));
    let id = d.add_task(
        "web",
        &format!(
            "Please run\n$(touch {})\n/dev/null touch FILE\ntouch X",
            marker.display()
        ),
    );
    let problem = until("the refusal on the session", || {
        assert!(
            !marker.exists() && !file.exists() && !touch.exists(),
            "a task's words ran in the shell in front of the suspended agent"
        );
        let p = h.session("s-1")["deliveryProblem"].clone();
        (!p.is_null()).then_some(p)
    });
    assert_eq!(problem["method"], "tmux paste", "{problem}");
    let why = problem["why"].as_str().unwrap();
    assert!(
        why.contains(&format!("bash (process {})", tmux.pane_pid(&pane)))
            && why.contains(&format!(
                "in front of the pane's terminal, not the session's process {pid}"
            )),
        "{why}"
    );
    shell_ran_nothing_of_it(&tmux, &pane, &d.data_dir, &marker);
    assert!(!file.exists() && !touch.exists());
    assert!(
        !tmux.run(&["capture-pane", "-p", "-t", &pane]).contains(&id),
        "nothing of the task reached the shell's screen"
    );
    assert!(read(&record).is_none(), "nor the agent");
    assert!(d.task(&id)["deliveredAt"].is_null(), "the task waits");
}

/// The session's process (here a bash that is the pane's own) runs an editor in a process
/// group of its own, in front of the terminal: the editor gets no paste and no Enter, and the
/// desk's command delivers instead.
#[test]
fn an_editor_in_front_of_the_agent_gets_nothing_and_the_command_delivers() {
    let d = TestDaemon::start();
    let h = Hooks::new(&d);
    let texts = web_desk(&d, &h);
    let tmux = Tmux::new(&d.data_dir);
    let pane = bash(&tmux, "cc");
    let agent = tmux.pane_pid(&pane);
    let (_editor, record) = start_job(&tmux, &pane, &d.data_dir, "editor");
    let (status, _) = h.send(
        "s-1",
        "SessionStart",
        json!({"source": "startup"}),
        &reach(&tmux, &pane, Some(agent)),
    );
    assert_eq!(status, 200);

    let id = d.add_task("web", "Write this down\n:wq");
    until("the command to deliver", || {
        read(&texts).filter(|t| t.contains(&id))
    });
    until("the task marked delivered", || delivered(&d, &id));
    // Whatever the editor was given before now is in its record before this line is.
    tmux.type_line(&pane, "sentinel");
    let got = until("the editor to take the sentinel", || {
        read(&record).filter(|r| r.contains("sentinel"))
    });
    assert_eq!(got, "sentinel\n", "the editor got nothing of the task");
}

/// Texts Taskkeeper writes, with an asker's lines that a shell would act on at every turn:
/// a task with a file part, continued; a reminder quoting it and the session's last words;
/// its cancel notice.
fn hostile_texts() -> Vec<String> {
    let attack = "/dev/null touch FILE\ntouch X\n> made\n[Taskkeeper] x\n$(touch sub)\n\
                  ;touch semi\n&touch amp\n(touch paren)\n{ touch brace; }\n:>colon\n\
                  .\t/dev/null\n-touch dash\n- touch zsh\n%1\n!!\n^a^b\n~/x\n=touch\n\
                  *\n?\n#touch hash\nA=1 touch assign\nif true; then touch if; fi\n\
                  \"touch\" quoted\n'\n\u{2028}touch sep\n";
    let now = Timestamp::from_millis(5);
    let new = NewTask {
        desk: "web".parse().unwrap(),
        asker: "mallory".into(),
        request: Message::user_text("m-1", attack),
        context_id: None,
        metadata: Default::default(),
    };
    let mut t = Task::submit(TaskId::from("t-1"), new, 1, now);
    let mut file = Part::text("");
    file.content = PartContent::Raw("aGVsbG8=".into());
    file.filename = Some("x\ntouch name".into());
    t.history[0].parts.push(file);
    t = apply(&t, Event::Start, now).unwrap();
    t.last_words = Some(attack.into());
    t = apply(&t, Event::WorkerBlocked { need: "?".into() }, now).unwrap();
    t = apply(
        &t,
        Event::FollowUp {
            message: Message::user_text("m-2", attack),
        },
        now,
    )
    .unwrap();
    let canceled = apply(
        &t,
        Event::Cancel {
            reason: Some(attack.into()),
        },
        now,
    )
    .unwrap();
    let files = Path::new("/nonexistent/files");
    vec![
        delivery::task_text(&t, files),
        delivery::watchdog_text(1, &[&t], &[&t]),
        delivery::cancel_text(&canceled),
    ]
}

/// A directory whose only files are the test's: bait for a glob (`[Taskkeeper]` matches a
/// file named by one of its letters, and runs it).
fn scratch(root: &Path) -> PathBuf {
    let dir = root.join("scratch");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["T", "a", "s", "k", "e", "p", "r", "x"] {
        std::fs::write(dir.join(name), "").unwrap();
    }
    dir
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Each line of what Taskkeeper writes, run alone by bash and by dash (and zsh and fish where
/// they are installed), in a directory of glob bait with nothing on the PATH: its first word
/// is no redirection, glob, assignment, builtin or keyword: the shell says that very word is
/// no command, or refuses the line as a syntax error. (The old frame fails here: `> touch X`
/// runs `X`, `[Taskkeeper]` runs `T`.) Only the first word: a `>` or a `$(` later in a line
/// still acts, which is why the paste goes only to the agent itself.
#[test]
fn no_line_taskkeeper_writes_begins_with_a_word_a_shell_acts_on() {
    let root = tempfile::tempdir().unwrap();
    let dir = scratch(root.path());
    let nothing = root.path().join("empty-path");
    std::fs::create_dir_all(&nothing).unwrap();
    let texts = hostile_texts();
    let lines: Vec<&str> = texts
        .iter()
        .flat_map(|t| t.lines())
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert!(lines.len() > 80, "{texts:?}");
    let installed = |shell: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {shell}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let shells: Vec<&str> = ["bash", "dash", "zsh", "fish"]
        .into_iter()
        .filter(|s| matches!(*s, "bash" | "dash") || installed(s))
        .collect();
    for shell in shells {
        let path = Command::new("sh")
            .args(["-c", &format!("command -v {shell}")])
            .output()
            .unwrap();
        let path = String::from_utf8_lossy(&path.stdout).trim().to_owned();
        for line in &lines {
            let word = line.split_whitespace().next().unwrap();
            let mut child = Command::new(&path)
                .args(match shell {
                    "zsh" => &["-f"][..],
                    "fish" => &["--no-config"][..],
                    _ => &[][..],
                })
                .current_dir(&dir)
                .env_clear()
                .env("PATH", &nothing)
                .env("HOME", root.path())
                .env("LC_ALL", "C.UTF-8")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            use std::io::Write as _;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(format!("{line}\n").as_bytes())
                .unwrap();
            let out = child.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            let said_no_command = err.contains(&format!("{word}: command not found"))
                || err.contains(&format!("{word}: not found"))
                || err.contains(&format!("command not found: {word}"));
            let refused =
                err.to_lowercase().contains("syntax error") || err.contains("unexpected EOF");
            let acted = !out.status.success() && (said_no_command || refused);
            // zsh and fish read a `(` later in a line of Taskkeeper's own as a glob qualifier
            // or a command substitution, and stop there: its first word did not act.
            let stopped = matches!(shell, "zsh" | "fish") && !out.status.success();
            assert!(
                acted || stopped,
                "{shell} acted on the first word of {line:?}: {} {err}",
                out.status
            );
        }
    }
}

/// The frame of an asker's hostile lines, pasted (bracketed, then Enter, as the paste does)
/// into a bare interactive bash: no line's first word acts, so `/dev/null touch FILE` and
/// `touch X` make nothing (behind `> `, the first made FILE and the second a file `touch`).
#[test]
fn the_frame_pasted_into_a_bare_bash_makes_nothing() {
    let root = tempfile::tempdir().unwrap();
    let dir = scratch(root.path());
    let before = files_in(&dir);
    let tmux = Tmux {
        sock: root.path().join("tmux.sock"),
        dir: dir.clone(),
    };
    // Every prompt bash shows (its own, or the one of a line that goes on) adds a line here.
    let prompts = root.path().join("prompts");
    let pane = tmux.pane(
        "bare",
        &format!(
            "env HISTFILE=/dev/null PS1='ready$ ' PS2='$(echo >> {p})> ' PROMPT_COMMAND='echo >> {p}' \
             bash --norc --noprofile -i",
            p = prompts.display()
        ),
    );
    let shown = || read(&prompts).map_or(0, |p| p.lines().count());
    until("bash's prompt", || (shown() > 0).then_some(()));
    let before_paste = shown();
    let now = Timestamp::from_millis(5);
    let new = NewTask {
        desk: "web".parse().unwrap(),
        asker: "mallory".into(),
        request: Message::user_text("m-1", "/dev/null touch FILE\ntouch X\n[Taskkeeper] x"),
        context_id: None,
        metadata: Default::default(),
    };
    let t = Task::submit(TaskId::from("t-1"), new, 1, now);
    let text = delivery::terminal_safe(&delivery::task_text(&t, Path::new("/nonexistent")));
    let buffer = root.path().join("buffer");
    std::fs::write(&buffer, &text).unwrap();
    tmux.run(&["load-buffer", "-b", "frame", &buffer.to_string_lossy()]);
    tmux.run(&["paste-buffer", "-p", "-d", "-b", "frame", "-t", &pane]);
    tmux.run(&["send-keys", "-t", &pane, "Enter"]);
    // bash has run all it was given once it shows a prompt again: its own, or the one of a
    // line that goes on (a quote of Taskkeeper's left open).
    until("bash to run the paste", || {
        (shown() > before_paste).then_some(())
    });
    let made: Vec<String> = files_in(&dir)
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect();
    assert!(
        made.is_empty(),
        "bash made {made:?} from the frame:\n{text}"
    );
    // The quoted lines reached bash, as lines that run nothing.
    until("bash to say the quote is no command", || {
        tmux.run(&["capture-pane", "-p", "-S", "-", "-t", &pane])
            .contains("│: command not found")
            .then_some(())
    });
}

/// A desk of its own with a recorder standing in for its agent in a pane of `tmux`, and its
/// session, not started yet.
struct Agent<'a> {
    desk: String,
    session: String,
    hooks: Hooks<'a>,
    reach: Vec<(&'static str, String)>,
    record: PathBuf,
}

impl<'a> Agent<'a> {
    fn at_desk(d: &'a TestDaemon, tmux: &Tmux, desk: &str) -> Self {
        let mut hooks = Hooks::new(d);
        hooks.cwd = d.data_dir.join(desk).to_string_lossy().into_owned();
        std::fs::create_dir_all(&hooks.cwd).unwrap();
        let (status, v) = d.call(
            "POST",
            "/api/desks",
            Some(&json!({"name": desk, "dir": hooks.cwd})),
        );
        assert_eq!(status, 201, "{v}");
        let (pane, pid, record) = recorder(tmux, &d.data_dir, desk);
        Self {
            desk: desk.to_owned(),
            session: format!("s-{desk}"),
            hooks,
            reach: reach(tmux, &pane, Some(pid)),
            record,
        }
    }

    /// Its SessionStart hook, naming its pane and process.
    fn starts(&self) {
        let (status, out) = self.hooks.send(
            &self.session,
            "SessionStart",
            json!({"source": "startup"}),
            &self.reach,
        );
        assert_eq!(status, 200, "{out}");
    }

    fn hook(&self, event: &str, extra: serde_json::Value) {
        self.hooks.ok(&self.session, event, extra);
    }
}

/// Four agents in four panes of one tmux server, a session and a desk each, a task sent to
/// each at once, three rounds: each task is pasted into its own pane only, once, none is lost
/// (every paste confirmed by its own session's turn), no paste fails for a missing buffer
/// (a failure would leave its task undelivered: there is no command to fall back to), and no
/// buffer is left on the server.
#[test]
fn concurrent_pastes_each_land_in_their_own_pane() {
    let d = TestDaemon::start();
    let tmux = Tmux::new(&d.data_dir);
    let desks: Vec<Agent<'_>> = (0..4)
        .map(|i| {
            let agent = Agent::at_desk(&d, &tmux, &format!("desk{i}"));
            agent.starts();
            agent
        })
        .collect();

    let mut sent: Vec<Vec<String>> = vec![Vec::new(); desks.len()];
    for round in 0..3 {
        let barrier = std::sync::Barrier::new(desks.len());
        let ids: Vec<String> = std::thread::scope(|s| {
            let handles: Vec<_> = desks
                .iter()
                .map(|agent| {
                    let (barrier, d, desk) = (&barrier, &d, &agent.desk);
                    s.spawn(move || {
                        barrier.wait();
                        d.add_task(desk, &format!("Round {round} for {desk} only"))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (i, agent) in desks.iter().enumerate() {
            let id = &ids[i];
            until("the paste and its Enter in its own pane", || {
                let got = read(&agent.record)?;
                for (j, other) in ids.iter().enumerate().filter(|(j, _)| *j != i) {
                    assert!(
                        !got.contains(other.as_str()),
                        "desk{j}'s task {other} was pasted into desk{i}'s pane: {got:?}"
                    );
                }
                (got.contains(id.as_str()) && got.ends_with('\r')).then_some(())
            });
            // The session's turn starts with the pasted prompt: the paste is confirmed.
            agent.hook("UserPromptSubmit", json!({"prompt": "(pasted)"}));
            until("the task marked delivered", || delivered(&d, id));
            sent[i].push(id.clone());
        }
        for (i, agent) in desks.iter().enumerate() {
            let (status, _) = d.call(
                "POST",
                &format!("/api/tasks/{}/update", ids[i]),
                Some(&json!({"status": "done", "text": "Done"})),
            );
            assert_eq!(status, 200);
            agent.hook("Stop", json!({"last_assistant_message": "Done."}));
        }
    }
    for (i, agent) in desks.iter().enumerate() {
        let (desk, got) = (&agent.desk, read(&agent.record).unwrap());
        assert_eq!(
            got.matches("\u{1b}[200~").count(),
            3,
            "one paste a round into {desk}'s pane: {got:?}"
        );
        for (j, ids) in sent.iter().enumerate() {
            for id in ids {
                assert_eq!(
                    got.contains(id.as_str()),
                    i == j,
                    "task {id} of desk{j} in {desk}'s pane: {got:?}"
                );
            }
        }
    }
    let buffers = Command::new("tmux")
        .arg("-S")
        .arg(&tmux.sock)
        .arg("list-buffers")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&buffers.stdout),
        "",
        "no buffer is left behind"
    );
}

/// A session too young to paste into (it may not have drawn its prompt yet) is looked at
/// again once it is not, even when another desk changes meanwhile: the pass that change
/// brings looks only at that desk, and the young session's task was lost until its next hook.
#[test]
fn a_young_sessions_task_is_pasted_though_another_desk_changed_meanwhile() {
    let d = TestDaemon::start();
    let tmux = Tmux::new(&d.data_dir);
    let (young, other) = (
        Agent::at_desk(&d, &tmux, "young"),
        Agent::at_desk(&d, &tmux, "other"),
    );
    young.starts();
    other.starts();
    let id = d.add_task("young", "For the young session");
    // The other desk keeps changing while the young session is too young, and a while
    // after: the passes these changes bring look at the other desk only.
    for _ in 0..12 {
        other.hook(
            "PostToolUse",
            json!({"tool_name": "Bash", "tool_input": {}, "tool_response": {}}),
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    until("the paste into the young session's pane", || {
        read(&young.record).filter(|r| r.contains(&id) && r.ends_with('\r'))
    });
    young.hook("UserPromptSubmit", json!({"prompt": "(pasted)"}));
    until("the task marked delivered", || delivered(&d, &id));
    assert!(
        read(&other.record).is_none(),
        "nothing went to the other pane"
    );
}
