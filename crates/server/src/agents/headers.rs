//! The names of the headers an agent's side sends with its hooks and MCP calls, shared by the
//! daemon that reads them and the CLI (`taskkeeper hook`) and launcher that write them, so a
//! rename cannot leave one side behind. HTTP header names are case-insensitive; these are the
//! lowercase forms `http::HeaderName` uses.

/// The desk a hook's session works at (the helper's `TASKKEEPER_DESK`).
pub const DESK: &str = "x-taskkeeper-desk";
/// The session's tmux server (`TMUX`: socket, server pid, session).
pub const TMUX: &str = "x-taskkeeper-tmux";
/// The session's tmux pane (`TMUX_PANE`).
pub const TMUX_PANE: &str = "x-taskkeeper-tmux-pane";
/// The agent process the hook helper runs under.
pub const PID: &str = "x-taskkeeper-pid";
/// Claude Code's inbox socket (`CLAUDE_CODE_MESSAGING_SOCKET`).
pub const MESSAGING_SOCKET: &str = "x-taskkeeper-messaging-socket";
/// The token of Claude Code's inbox socket (`CLAUDE_CODE_MESSAGING_TOKEN`).
pub const MESSAGING_TOKEN: &str = "x-taskkeeper-messaging-token";
/// The Codex home of a Codex hook (`CODEX_HOME`, else `~/.codex`), where the app server that
/// runs the session keeps its control socket.
pub const CODEX_HOME: &str = "x-taskkeeper-codex-home";
/// How Claude Code runs (`CLAUDE_CODE_ENTRYPOINT`: `cli` interactive, `sdk-*` for `-p`).
pub const ENTRYPOINT: &str = "x-taskkeeper-entrypoint";
/// Claude Code's own status file for the session.
pub const STATUS_FILE: &str = "x-taskkeeper-status-file";
/// The calling session on MCP requests of a launched session.
pub const SESSION: &str = "x-taskkeeper-session";
/// That session's proof (see [`crate::http::auth`]).
pub const SESSION_PROOF: &str = "x-taskkeeper-session-proof";

/// Not a header: the environment variable the launcher sets to a launched Codex or Gemini
/// session's id. The hook helper (`taskkeeper hook codex|gemini`) stays silent where it is
/// set, since the daemon drives that session itself and the agent's own id for it is not
/// Taskkeeper's (a hook would make a second session of it).
pub const LAUNCHED_SESSION_ENV: &str = "TASKKEEPER_LAUNCHED_SESSION";
