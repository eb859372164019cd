//! `taskkeeper`: runs the daemon (`serve`) and talks to a running one over the owner API
//! (desks and tasks). Errors print one line that says what went wrong and what to do.

mod a2a_client;
mod asking;
mod client;
mod commands;
mod connect;
mod doctor;
mod hook;
mod open;
mod out;
mod service;
mod session_process;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "taskkeeper",
    version,
    about = "Keeps the tasks agents give your AI coding sessions open until they are finished"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the daemon in the foreground (no GUI), until SIGINT or SIGTERM.
    Serve {
        /// Port on 127.0.0.1.
        #[arg(long, env = "TASKKEEPER_PORT", default_value_t = taskkeeper_server::DaemonConfig::default_port())]
        port: u16,
        /// Where the database, token and log live (default: the OS data directory).
        #[arg(long, env = "TASKKEEPER_DATA_DIR")]
        data_dir: Option<PathBuf>,
        /// Add the scripted `tck` desk for the official A2A conformance kit (never for real work).
        #[arg(long)]
        conformance: bool,
        /// Also serve the web UI at /ui/ (open it with `taskkeeper open`). DIR is the built
        /// `ui/dist`; without it, TASKKEEPER_UI_DIR, else the one beside this binary or its
        /// workspace.
        #[arg(long, value_name = "DIR", num_args = 0..=1)]
        ui: Option<Option<PathBuf>>,
        #[command(flatten)]
        network: commands::NetworkFlags,
    },
    /// Check the database's write-ahead log without changing anything; with --recover, get
    /// past a damaged one.
    ///
    /// `serve` refuses to start when replaying the log would drop committed work. --recover
    /// first copies the database, its -wal and -shm into a new `damaged-<time>` folder in the
    /// data directory, then keeps what verifies and reports how many committed transactions
    /// were dropped. Exits non-zero while the log is damaged.
    Doctor {
        /// Where the database lives (default: the OS data directory).
        #[arg(long, env = "TASKKEEPER_DATA_DIR")]
        data_dir: Option<PathBuf>,
        /// Copy the damaged files aside, then replay what verifies (needs the daemon stopped).
        #[arg(long)]
        recover: bool,
    },
    /// Open the web UI in your browser, signed in as the owner (needs `taskkeeper serve --ui`).
    ///
    /// The address holds a one-time sign-in code (`/ui/#code=...`, good for 60 s), never the
    /// owner token: the browser's command line is readable by every local user. The page
    /// trades the code for the token at once, keeps the token in the tab's session storage
    /// and removes the code from the address bar; the same address a second time is refused.
    Open {
        /// Print the address (with its one-time code) instead of opening a browser.
        #[arg(long)]
        print: bool,
    },
    /// Desks: named workers bound to a directory and an agent kind.
    #[command(subcommand)]
    Desk(DeskCommand),
    /// Tasks: give a desk a task, list, read, end or cancel them.
    #[command(subcommand)]
    Task(TaskCommand),
    /// What Claude Code runs for its hooks (configured by `connect`).
    Hook {
        #[command(subcommand)]
        what: Option<HookCommand>,
    },
    /// For agents without a Taskkeeper adapter: report what a session is doing, so the
    /// watchdog knows when it is quiet (call it from the agent's own hooks). EVENT is
    /// started, turn-started, turn-ended, waiting (on the owner) or ended. Quiet on success.
    Report(hook::Report),
    /// Register Taskkeeper with an agent (hooks, MCP server, permissions), or undo it.
    Connect {
        #[command(subcommand)]
        agent: ConnectCommand,
    },
    /// The daemon as a per-user service where there is no desktop: a systemd user unit
    /// (Linux) or a launchd agent (macOS) running `taskkeeper serve`.
    #[command(subcommand)]
    Service(ServiceCommand),
    /// Print the MCP server's Authorization header for Claude Code's headersHelper.
    #[command(hide = true)]
    McpHeaders,
    /// Desks, sessions and what each session is doing.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Askers: agents allowed to give tasks over A2A, each with its own token.
    #[command(subcommand)]
    Asker(AskerCommand),
    /// The Agent Cards' signing key: show it, or make a new one.
    #[command(subcommand)]
    Card(CardCommand),
    /// Settings: the ladder, the hourly cap, expiry, the blocking-wait cap, ...
    #[command(subcommand)]
    Settings(SettingsCommand),
    /// Sessions: pause or resume one's reminders; launch or stop a headless one.
    #[command(subcommand)]
    Session(SessionCommand),
    /// Pause or resume all reminders.
    #[command(subcommand)]
    Reminders(RemindersCommand),
    /// What happened since the last digest: what stalled, what finished, what waits on you,
    /// acknowledgements still pending, reminders sent. Taking it starts the next from now.
    Digest {
        /// Show it without taking it (the next digest still starts where this one does).
        #[arg(long)]
        peek: bool,
        #[arg(long)]
        json: bool,
    },
    /// A2A: send a task to a desk (or continue one with --task).
    Send {
        /// The desk (ignored with --url).
        #[arg(value_name = "DESK")]
        to: String,
        text: String,
        /// Wait until the task ends or needs input (the default).
        #[arg(long, conflicts_with = "no_wait")]
        wait: bool,
        /// Answer at once with the task as it is.
        #[arg(long)]
        no_wait: bool,
        /// Put the task in this context.
        #[arg(long)]
        context: Option<String>,
        /// Continue this task (an answer to a question, or more detail).
        #[arg(long)]
        task: Option<String>,
        #[command(flatten)]
        a2a: A2aArgs,
    },
    /// A2A: show a task.
    Get {
        id: String,
        #[command(flatten)]
        a2a: A2aArgs,
    },
    /// A2A: list your tasks, newest first.
    List {
        #[command(flatten)]
        a2a: A2aArgs,
    },
    /// A2A: cancel a task.
    Cancel {
        id: String,
        #[command(flatten)]
        a2a: A2aArgs,
    },
    /// A2A: acknowledge an ended task (the AckTask extension method).
    Ack {
        id: String,
        #[command(flatten)]
        a2a: A2aArgs,
    },
    /// A2A: follow a task's changes until it ends.
    Watch {
        id: String,
        #[command(flatten)]
        a2a: A2aArgs,
    },
}

/// Where the A2A verbs send their requests.
#[derive(Debug, clap::Args)]
struct A2aArgs {
    /// The desk whose endpoint to use (default: the machine endpoint /a2a).
    #[arg(long)]
    desk: Option<String>,
    /// Any A2A JSON-RPC endpoint instead of the local daemon.
    #[arg(long, env = "TASKKEEPER_A2A_URL")]
    url: Option<String>,
    /// The bearer token (default: TASKKEEPER_TOKEN or the owner's token file).
    #[arg(long, env = "TASKKEEPER_A2A_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Print the A2A JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum SettingsCommand {
    /// Show one setting, or all.
    Get { key: Option<String> },
    /// Change a setting (`taskkeeper settings list` says what each takes).
    Set { key: String, value: String },
    /// Every setting by group: its value, default, what it takes and what it does.
    List {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
enum SessionCommand {
    /// Pause one session's reminders.
    Pause { id: String },
    /// Resume one session's reminders.
    Resume { id: String },
    /// Launch a headless session at a desk, of the desk's agent (owned by the daemon): Claude
    /// Code as `claude -p`, Codex as `codex app-server`, Gemini as `gemini --acp`
    /// (`TASKKEEPER_CLAUDE`, `TASKKEEPER_CODEX`, `TASKKEEPER_GEMINI` name other binaries).
    /// Taskkeeper gives it the desk's tasks and reminders on its stdin. Prints its id.
    Launch { desk: String },
    /// Stop a session Taskkeeper launched (its stdin closes; killed after 10 s).
    Stop { id: String },
    /// Allow the tool a launched session asks for (`taskkeeper status` shows what it asks).
    Allow { id: String },
    /// Deny the tool a launched session asks for; the model reads the message.
    Deny {
        id: String,
        #[arg(long)]
        message: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
enum RemindersCommand {
    Pause,
    Resume,
}

#[derive(Debug, Subcommand)]
enum HookCommand {
    /// The asyncRewake waiter: exits 2 with text that wakes the idle session.
    Wait,
    /// What Codex CLI runs for its hooks (configured by `connect codex`).
    Codex,
    /// What Gemini CLI runs for its hooks (configured by `connect gemini`).
    Gemini,
}

#[derive(Debug, Subcommand)]
enum ConnectCommand {
    /// Claude Code: merge the hooks, the MCP server and the tool permission into its settings.
    ClaudeCode {
        /// The user's settings (~/.claude/settings.json), the default.
        #[arg(long, conflicts_with = "project")]
        user: bool,
        /// One project's local settings (DIR/.claude/settings.local.json).
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
        /// Restore exactly what was there before.
        #[arg(long, conflicts_with_all = ["check", "force"])]
        undo: bool,
        /// Say whether the hooks and the MCP server still point at a working Taskkeeper (the
        /// binary they name exists and runs; a daemon answers at the address). Changes nothing.
        #[arg(long, conflicts_with = "force")]
        check: bool,
        /// Connect even when this `taskkeeper` lives in a Cargo build directory (`cargo clean`
        /// will break the hooks; install it first instead).
        #[arg(long)]
        force: bool,
    },
    /// Codex CLI: merge the hooks into $CODEX_HOME/hooks.json and the MCP server into
    /// $CODEX_HOME/config.toml (CODEX_HOME defaults to ~/.codex). Codex runs the hooks once
    /// you have trusted them in its hook review.
    Codex(OtherAgent),
    /// Gemini CLI: merge the hooks and the MCP server into ~/.gemini/settings.json.
    Gemini(OtherAgent),
}

#[derive(Debug, clap::Args)]
struct OtherAgent {
    /// Restore exactly what was there before.
    #[arg(long, conflicts_with_all = ["check", "force"])]
    undo: bool,
    /// Say whether the hooks and the MCP server still point at a working Taskkeeper (the
    /// binary they name runs; a daemon answers at the address; the token is its worker
    /// token). Changes nothing.
    #[arg(long, conflicts_with = "force")]
    check: bool,
    /// Connect even when this `taskkeeper` lives in a Cargo build directory.
    #[arg(long)]
    force: bool,
}

impl OtherAgent {
    fn action(&self) -> connect::Action {
        match (self.undo, self.check) {
            (true, _) => connect::Action::Undo,
            (_, true) => connect::Action::Check,
            _ => connect::Action::Connect { force: self.force },
        }
    }
}

#[derive(Debug, Subcommand)]
enum ServiceCommand {
    /// Write the unit (or agent) for `taskkeeper serve`, enable it and start it.
    Install {
        /// Port on 127.0.0.1 (default 7717).
        #[arg(long)]
        port: Option<u16>,
        /// Where the database, token and log live (default: the OS data directory).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Also serve the web UI (`taskkeeper open` opens it).
        #[arg(long)]
        ui: bool,
        /// Only write the file; print the commands that start it.
        #[arg(long)]
        no_start: bool,
        /// Install even when this `taskkeeper` lives in a Cargo build directory.
        #[arg(long)]
        force: bool,
    },
    /// Stop the service and remove its file.
    Uninstall,
    /// Whether the service is installed, and whether it runs.
    Status,
}

#[derive(Debug, Subcommand)]
enum AskerCommand {
    /// Register an asker and print its token (shown only this once).
    Add { name: String },
    /// List the askers.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Remove an asker: its token stops working; its tasks stay.
    Remove { name: String },
}

#[derive(Debug, Subcommand)]
enum CardCommand {
    /// Print the thumbprint of the key the cards are signed with (the `kid` of their
    /// signatures, which askers pin) and its public JWK.
    Key {
        #[arg(long)]
        json: bool,
    },
    /// Make a new signing key in the running daemon: every card is signed by it from now on
    /// and /.well-known/jwks.json holds it alone, so the old key's signatures stop
    /// verifying. Hand askers the new thumbprint.
    RotateKey,
}

#[derive(Debug, Subcommand)]
enum DeskCommand {
    /// Add a desk.
    Add {
        name: String,
        /// The working directory of the desk's sessions.
        #[arg(long)]
        dir: PathBuf,
        /// claude-code, codex, gemini or generic.
        #[arg(long, default_value = "claude-code")]
        agent: String,
        /// A shell command that delivers text to the desk's agent: Taskkeeper runs it with
        /// the text on stdin (and TASKKEEPER_DESK, TASKKEEPER_TASKS, TASKKEEPER_SESSION set)
        /// when no better way in is available; exit status 0 means delivered.
        #[arg(long, value_name = "COMMAND")]
        deliver_command: Option<String>,
    },
    /// Change a desk: set or remove its delivery command; turn its launching a session by
    /// itself on or off.
    Set {
        name: String,
        /// See `desk add --deliver-command`.
        #[arg(long, value_name = "COMMAND", conflicts_with = "no_deliver_command")]
        deliver_command: Option<String>,
        /// Remove the delivery command.
        #[arg(long)]
        no_deliver_command: bool,
        /// on: launch a headless session by itself whenever the desk has work and no live
        /// session (also after a reboot, when the daemon starts at login); off (the default):
        /// only the owner launches.
        #[arg(long, value_name = "on|off", value_parser = ["on", "off"])]
        auto_launch: Option<String>,
    },
    /// List the desks.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Remove a desk that has no open tasks.
    Remove { name: String },
}

#[derive(Debug, Subcommand)]
enum TaskCommand {
    /// Give a desk a task (the asker is "owner").
    Add { desk: String, text: String },
    /// List tasks (open ones by default).
    List {
        /// open, ended or all.
        #[arg(long, default_value = "open")]
        state: String,
        #[arg(long)]
        desk: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Show one task with its history.
    Get {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// The worker's ending: done, blocked, failed or rejected (declined, not taken on), with
    /// a summary, a need or a reason; or working, to attach files or data and keep the task
    /// open.
    Update {
        id: String,
        status: String,
        /// The summary, the need or the reason (not needed with `working`).
        #[arg(default_value = "")]
        text: String,
        /// A file to give the asker as an artifact (inside the task's desk's directory);
        /// repeat for more.
        #[arg(long = "file", value_name = "PATH")]
        files: Vec<std::path::PathBuf>,
        /// A JSON value to give the asker as a data artifact; repeat for more.
        #[arg(long = "data", value_name = "JSON")]
        data: Vec<String>,
    },
    /// Cancel a task.
    Cancel {
        id: String,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Remind the session holding a task now.
    Remind { id: String },
    /// Start a stalled task's ladder again.
    Resume { id: String },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        // The hook verbs choose their own exit codes and never print errors.
        Command::Hook { what: None } => return hook::hook(hook::Agent::ClaudeCode),
        Command::Hook {
            what: Some(HookCommand::Wait),
        } => return hook::wait(),
        Command::Hook {
            what: Some(HookCommand::Codex),
        } => return hook::hook(hook::Agent::Codex),
        Command::Hook {
            what: Some(HookCommand::Gemini),
        } => return hook::hook(hook::Agent::Gemini),
        Command::McpHeaders => hook::mcp_headers(),
        Command::Report(report) => hook::report(report),
        Command::Connect {
            agent:
                ConnectCommand::ClaudeCode {
                    user: _,
                    project,
                    undo,
                    check,
                    force,
                },
        } => {
            let action = match (undo, check) {
                (true, _) => connect::Action::Undo,
                (_, true) => connect::Action::Check,
                _ => connect::Action::Connect { force },
            };
            connect::claude_code(project, action)
        }
        Command::Connect {
            agent: ConnectCommand::Codex(a),
        } => connect::other(connect::Other::Codex, a.action()),
        Command::Connect {
            agent: ConnectCommand::Gemini(a),
        } => connect::other(connect::Other::Gemini, a.action()),
        Command::Service(ServiceCommand::Install {
            port,
            data_dir,
            ui,
            no_start,
            force,
        }) => service::install(&service::ServeArgs { port, data_dir, ui }, !no_start, force),
        Command::Service(ServiceCommand::Uninstall) => service::uninstall(),
        Command::Service(ServiceCommand::Status) => service::status(),
        Command::Status { json } => commands::status(json),
        Command::Settings(cmd) => commands::settings(cmd),
        Command::Session(cmd) => commands::session(cmd),
        Command::Reminders(cmd) => commands::reminders(cmd),
        Command::Digest { peek, json } => commands::digest(peek, json),
        Command::Serve {
            port,
            data_dir,
            conformance,
            ui,
            network,
        } => commands::serve(port, data_dir, conformance, ui, &network),
        Command::Open { print } => open::open(print),
        Command::Doctor { data_dir, recover } => doctor::doctor(data_dir, recover),
        Command::Desk(cmd) => commands::desk(cmd),
        Command::Task(cmd) => commands::task(cmd),
        Command::Asker(cmd) => commands::asker(cmd),
        Command::Card(cmd) => commands::card(cmd),
        Command::Send {
            to,
            text,
            wait: _,
            no_wait,
            context,
            task,
            a2a,
        } => asking::send(&to, &text, !no_wait, context, task, a2a),
        Command::Get { id, a2a } => asking::a2a_get(&id, a2a),
        Command::List { a2a } => asking::a2a_list(a2a),
        Command::Cancel { id, a2a } => asking::a2a_cancel(&id, a2a),
        Command::Ack { id, a2a } => asking::a2a_ack(&id, a2a),
        Command::Watch { id, a2a } => asking::a2a_watch(&id, a2a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            out::tell!("taskkeeper: {:#}", e);
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_is_well_formed() {
        <super::Cli as clap::CommandFactory>::command().debug_assert();
    }
}
