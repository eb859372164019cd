//! Claude Code, the first agent Taskkeeper serves natively: its adapter (its hooks' meaning,
//! its ways in, a session's level signals), what its hooks have beyond the shared intake (the
//! waiter), and its headless sessions (`claude -p` launched by the daemon and driven over
//! stream-json).

pub(crate) mod adapter;
pub mod headless;
pub(crate) mod hooks;
