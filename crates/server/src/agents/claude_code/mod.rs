//! Claude Code, the first agent Taskkeeper serves natively: its hooks (a session working in
//! a terminal tells the daemon what it does and takes its handover at Stop) and its headless
//! sessions (`claude -p` launched by the daemon and driven over stream-json).

pub mod headless;
pub(crate) mod hooks;
