//! `taskkeeper hook` and `taskkeeper hook wait`: what Claude Code runs for its hooks.
//!
//! `hook` forwards the hook's JSON to the daemon with what the environment knows (the desk,
//! the tmux pane, the pid, the inbox socket and its token, the entrypoint, the session's
//! status file) and prints what
//! the daemon says the event needs. It always exits 0, quickly and silently — within
//! [`HOOK_BUDGET`] even when the daemon is down or the payload is garbage: a hook must never
//! break or slow a session.
//!
//! `hook codex` and `hook gemini` are the same for Codex CLI and Gemini CLI (each to its own
//! intake; the answer is in that agent's words). Neither agent names its pid to its hooks, so
//! the helper finds the session's process among its own ancestors
//! ([`crate::session_process`]). `hook codex` also sends the Codex home
//! (`CODEX_HOME`, else `~/.codex`): Codex runs the hooks in the app server that runs the
//! session (unless the TUI runs it itself, `--no-daemon`), and the home names that server's
//! control socket.
//!
//! `report` is the same forwarding for agents without an adapter, in agent-neutral words.
//!
//! `hook wait` is the asyncRewake Stop handler: it long-polls the daemon and exits 2 with the
//! text on stderr when there is something for this idle session (Claude Code then wakes it),
//! or 0 quietly when it is superseded, the session starts a turn, or the daemon goes away.

use std::io::{Read as _, Write as _};
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use taskkeeper_server::agents::headers;

/// Everything `hook` does fits in this, or it gives up and exits 0.
pub const HOOK_BUDGET: Duration = Duration::from_millis(1800);
const MAX_PAYLOAD: u64 = 1024 * 1024;

fn read_stdin() -> Vec<u8> {
    let mut buf = Vec::new();
    let _ = std::io::stdin().take(MAX_PAYLOAD).read_to_end(&mut buf);
    buf
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The agent's status file for this process: `<config dir>/sessions/<pid>.json`.
fn status_file() -> Option<String> {
    let pid = env("CLAUDE_PID")?;
    let config =
        env("CLAUDE_CONFIG_DIR").or_else(|| env("HOME").map(|h| format!("{h}/.claude")))?;
    Some(format!("{config}/sessions/{pid}.json"))
}

/// A POST to the daemon with what the environment knows. No overall timeout: `hook` keeps
/// its budget with an alarm, `hook wait` waits as long as the daemon holds it. (An overall
/// timeout would also make ureq resolve the address on a thread of its own.)
fn request(path: &str) -> Option<ureq::RequestBuilder<ureq::typestate::WithBody>> {
    request_with(path, env("CLAUDE_PID"), true)
}

/// `claude`: send what only Claude Code's environment says (its pid, status file, inbox
/// socket and entrypoint); another agent started from a Claude Code terminal inherits those, and they are
/// not its own.
fn request_with(
    path: &str,
    pid: Option<String>,
    claude: bool,
) -> Option<ureq::RequestBuilder<ureq::typestate::WithBody>> {
    let token = crate::client::worker_token_from_env().ok()?;
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_millis(300)))
        .build()
        .new_agent();
    let mut req = agent
        .post(format!("{}{path}", crate::client::base_url()))
        .header("Authorization", format!("Bearer {token}"))
        .header("Content-Type", "application/json");
    for (header, value) in [
        (headers::DESK, env("TASKKEEPER_DESK")),
        (headers::TMUX_PANE, env("TMUX_PANE")),
        (headers::TMUX, env("TMUX")),
        (headers::PID, pid),
        (
            headers::MESSAGING_SOCKET,
            env("CLAUDE_CODE_MESSAGING_SOCKET").filter(|_| claude),
        ),
        (
            headers::MESSAGING_TOKEN,
            env("CLAUDE_CODE_MESSAGING_TOKEN").filter(|_| claude),
        ),
        // `cli` for an interactive session, `sdk-*` for `-p` (which takes a first message
        // from the SessionStart hook's answer).
        (
            headers::ENTRYPOINT,
            env("CLAUDE_CODE_ENTRYPOINT").filter(|_| claude),
        ),
        (headers::STATUS_FILE, status_file().filter(|_| claude)),
    ] {
        if let Some(v) = value {
            req = req.header(header, v);
        }
    }
    Some(req)
}

/// The agents `taskkeeper hook` forwards for, each to its own intake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    ClaudeCode,
    Codex,
    Gemini,
}

/// `taskkeeper hook` (Claude Code), `hook codex`, `hook gemini`: forward, print what the
/// daemon answers, exit 0 — always.
pub fn hook(agent: Agent) -> ExitCode {
    // The budget holds whatever blocks (a stdin that never closes, a daemon that accepts but
    // never answers): an alarm thread ends the process, silently and with 0, when it runs
    // out — unless the answer is already being printed (it holds `printing`). The work stays
    // on this thread and nothing waits for the alarm: on a busy machine every hand-off
    // between threads waits for a core, which had made the helper about twice as slow under
    // load (BENCHMARKS.md, Hook helper).
    let printing = Arc::new(Mutex::new(()));
    {
        let printing = Arc::clone(&printing);
        std::thread::spawn(move || {
            std::thread::sleep(HOOK_BUDGET);
            let _printing = printing.lock().unwrap_or_else(PoisonError::into_inner);
            std::process::exit(0);
        });
    }
    let payload = read_stdin();
    if agent != Agent::ClaudeCode && env(headers::LAUNCHED_SESSION_ENV).is_some() {
        // A session the daemon launched headless: the daemon reads its activity from the
        // protocol it drives it by, and its MCP calls carry their session in their headers.
        // The agent's own id for it is not Taskkeeper's, so a hook would only make a second
        // session of it.
        return ExitCode::SUCCESS;
    }
    let req =
        match agent {
            Agent::ClaudeCode => request("/hooks/claude-code"),
            // Codex runs its hooks where the session's thread runs (its shared app server,
            // or the TUI itself with `--no-daemon`): its home names where that server's
            // control socket is (a way to wake the idle session).
            Agent::Codex => request_with("/hooks/codex", session_pid(agent), false).map(|req| {
                match env("CODEX_HOME").or_else(|| env("HOME").map(|h| format!("{h}/.codex"))) {
                    Some(home) => req.header(headers::CODEX_HOME, home),
                    None => req,
                }
            }),
            Agent::Gemini => request_with("/hooks/gemini", session_pid(agent), false),
        };
    let answer = req.and_then(|req| {
        let mut resp = req.send(&payload[..]).ok()?;
        if resp.status() != 200 {
            return None;
        }
        resp.body_mut().read_to_string().ok()
    });
    let _printing = printing.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(out) = answer
        && !out.is_empty()
    {
        // The hook's answer is the agent's input (JSON it parses), not a terminal's, and
        // the daemon made the words in it `terminal_safe`: it goes out as it came.
        #[expect(
            clippy::disallowed_methods,
            reason = "the agent reads this, not a terminal"
        )]
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{out}").and_then(|()| stdout.flush());
    }
    ExitCode::SUCCESS
}

/// The session's process among the helper's ancestors, for Codex and Gemini (Claude Code
/// names its own, `CLAUDE_PID`).
fn session_pid(agent: Agent) -> Option<String> {
    let line = crate::session_process::ancestors();
    match agent {
        Agent::ClaudeCode => None,
        Agent::Codex => crate::session_process::codex_pid(&line),
        Agent::Gemini => crate::session_process::gemini_pid(&line),
    }
    .map(|pid| pid.to_string())
}

/// `taskkeeper hook wait`: exit 2 with the text to wake the session, else 0.
pub fn wait() -> ExitCode {
    let payload = read_stdin();
    let Some(req) = request("/hooks/claude-code/wait") else {
        return ExitCode::SUCCESS;
    };
    let Ok(mut resp) = req.send(&payload[..]) else {
        return ExitCode::SUCCESS;
    };
    if resp.status() != 200 {
        return ExitCode::SUCCESS;
    }
    let Ok(text) = resp.body_mut().read_to_string() else {
        return ExitCode::SUCCESS;
    };
    let Ok(answer) = serde_json::from_str::<Value>(&text) else {
        return ExitCode::SUCCESS;
    };
    match (answer["action"].as_str(), answer["text"].as_str()) {
        (Some("deliver"), Some(text)) => {
            // The wake-up text is Claude Code's input (exit 2: stderr goes to the model),
            // made by the daemon with its asker words quoted and `terminal_safe`.
            #[expect(
                clippy::disallowed_macros,
                reason = "the agent reads this, not a terminal"
            )]
            {
                eprintln!("{text}");
            }
            ExitCode::from(2)
        }
        _ => ExitCode::SUCCESS,
    }
}

/// What `taskkeeper report` sends.
#[derive(Debug, clap::Args)]
pub struct Report {
    #[arg(value_parser = clap::builder::PossibleValuesParser::new(taskkeeper_server::agents::generic::EVENTS))]
    event: String,
    /// The agent's id for the session (default: TASKKEEPER_SESSION).
    #[arg(long, env = "TASKKEEPER_SESSION")]
    session: String,
    /// codex, gemini or generic.
    #[arg(long, default_value = "generic")]
    agent: String,
    /// With turn-ended: what the agent said last.
    #[arg(long)]
    words: Option<String>,
    /// With turn-ended: a background command still running (repeat for several).
    #[arg(long = "background", value_name = "ID")]
    background: Vec<String>,
    /// The agent's process id: when it is gone, the session has ended.
    #[arg(long)]
    pid: Option<u32>,
}

/// `taskkeeper report`: one session report to the daemon; quiet on success.
pub fn report(r: Report) -> anyhow::Result<()> {
    let cwd = std::env::current_dir()?;
    let body = serde_json::json!({
        "session": r.session, "event": r.event, "cwd": cwd, "agent": r.agent,
        "lastWords": r.words, "background": r.background,
    });
    let req =
        request_with("/hooks/generic", r.pid.map(|p| p.to_string()), false).ok_or_else(|| {
            anyhow::anyhow!("no token: is the daemon set up (`taskkeeper serve` once)?")
        })?;
    let mut resp = req
        .config()
        .timeout_global(Some(Duration::from_secs(5)))
        .build()
        .send(body.to_string())
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot reach the daemon at {}: {e}",
                crate::client::base_url()
            )
        })?;
    if resp.status() == 200 {
        return Ok(());
    }
    let text = resp.body_mut().read_to_string().unwrap_or_default();
    let message = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
        .unwrap_or(text);
    anyhow::bail!("the daemon refused the report: {message}")
}

/// `taskkeeper mcp-headers`: the MCP server's headers for Claude Code's `headersHelper`, so
/// the token stays in its 0600 file instead of a settings file. The worker token, never the
/// owner's: whatever runs in a session can read these headers.
pub fn mcp_headers() -> anyhow::Result<()> {
    let token = crate::client::worker_token_from_env()?;
    crate::out::json_line(&serde_json::json!({"Authorization": format!("Bearer {token}")}))
}
