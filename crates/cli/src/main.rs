//! `taskkeeper`: runs the daemon (`serve`) and talks to a running one over the owner API
//! (desks and tasks). Errors print one line that says what went wrong and what to do.

mod client;
mod commands;

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
    },
    /// Desks: named workers bound to a directory and an agent kind.
    #[command(subcommand)]
    Desk(DeskCommand),
    /// Tasks: give a desk a task, list, read, end or cancel them.
    #[command(subcommand)]
    Task(TaskCommand),
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
    /// The worker's ending: done, blocked or failed, with a summary, a need or a reason.
    Update {
        id: String,
        status: String,
        text: String,
    },
    /// Cancel a task.
    Cancel {
        id: String,
        #[arg(long)]
        reason: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve { port, data_dir } => commands::serve(port, data_dir),
        Command::Desk(cmd) => commands::desk(cmd),
        Command::Task(cmd) => commands::task(cmd),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("taskkeeper: {e:#}");
            ExitCode::FAILURE
        }
    }
}
