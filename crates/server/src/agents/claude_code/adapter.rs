//! The Claude Code adapter (claude-code.md): its hooks (`core::agent_hooks`, Claude Code's
//! words: background work and self-scheduled wake-ups at Stop, `/clear`, rate limits), every
//! way in it offers (the SessionStart first message in `-p`, the Stop handover, the
//! asyncRewake waiter, the inbox socket, the paste), its status file as a level signal, and
//! headless sessions as `claude -p` over stream-json ([`super::headless`]).

use serde_json::Value;
use taskkeeper_core::agent_hooks::HookAgent;
use taskkeeper_core::delivery::Method;
use taskkeeper_core::session::SessionId;
use taskkeeper_core::{AgentKind, Desk};

use super::headless;
use crate::agents::adapter::{Adapter, LevelSignal};
use crate::agents::launch::{Launch, LaunchConfig, LaunchError};

pub(crate) struct ClaudeCode;

impl Adapter for ClaudeCode {
    fn kind(&self) -> AgentKind {
        AgentKind::ClaudeCode
    }

    fn name(&self) -> &'static str {
        "Claude Code"
    }

    fn lists_self_wakes(&self) -> bool {
        true
    }

    /// Its hooks report it; a second report would tell its turns twice.
    fn reports_generically(&self) -> bool {
        false
    }

    fn ways_in(&self) -> &'static [Method] {
        &[
            Method::StartMessage,
            Method::Handover,
            Method::Waiter,
            Method::Stdin,
            Method::Inbox,
            Method::Paste,
            Method::Command,
        ]
    }

    fn level_signals(&self) -> &'static [LevelSignal] {
        &[LevelSignal::ProcessGone, LevelSignal::StatusFile]
    }

    fn vocabulary(&self) -> Option<HookAgent> {
        Some(HookAgent::ClaudeCode)
    }

    fn hook_route(&self) -> Option<&'static str> {
        Some("/hooks/claude-code")
    }

    fn starts_with_message(&self, entrypoint: Option<&str>, payload: &Value) -> bool {
        let source = payload.get("source").and_then(Value::as_str).unwrap_or("");
        takes_start_message(entrypoint, source)
    }

    fn launch(
        &self,
        desk: &Desk,
        config: &LaunchConfig,
        id: &SessionId,
    ) -> Result<Option<Launch>, LaunchError> {
        headless::launch(desk, config, id).map(Some)
    }
}

/// Whether the session runs in non-interactive mode: `claude -p`, which the Agent SDK runs
/// too (`CLAUDE_CODE_ENTRYPOINT` `sdk-cli`, `sdk-ts`, `sdk-py`; an interactive one is `cli`).
pub(crate) fn is_print_session(entrypoint: Option<&str>) -> bool {
    matches!(entrypoint, Some("sdk-cli" | "sdk-ts" | "sdk-py"))
}

/// Whether Claude Code takes the SessionStart hook's `initialUserMessage` as the session's
/// first turn: a `-p` session ([`is_print_session`]) that is starting (`source` startup). An
/// interactive session ignores it — 2.1.332 does, as documented — and a task claimed for it
/// there would never arrive; it gets its first task through its inbox socket or its pane.
fn takes_start_message(entrypoint: Option<&str>, source: &str) -> bool {
    source == "startup" && is_print_session(entrypoint)
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use taskkeeper_core::agent_hooks::Happening;
    use taskkeeper_core::delivery::{Means, ranked};

    use super::*;

    #[test]
    fn claude_code_lists_its_background_work_and_wakes_but_no_interrupt() {
        let caps = ClaudeCode.capabilities();
        assert!(caps.lists_self_wakes);
        assert!(caps.stop_can_continue && caps.can_wake_idle && caps.takes_start_message);
        assert!(caps.launches_headless && !caps.reports_generically);
        assert_eq!(
            ClaudeCode.level_signals(),
            [LevelSignal::ProcessGone, LevelSignal::StatusFile]
        );
    }

    #[test]
    fn an_idle_claude_code_session_is_woken_by_its_inbox_before_a_paste() {
        let idle = Means {
            inbox: true,
            tmux_pane: true,
            command: true,
            ..Means::default()
        };
        assert_eq!(
            ranked(ClaudeCode.ways_in(), idle),
            [Method::Inbox, Method::Paste, Method::Command]
        );
        let stopping = Means {
            at_stop: true,
            waiter: true,
            ..idle
        };
        assert_eq!(ranked(ClaudeCode.ways_in(), stopping)[0], Method::Handover);
    }

    #[test]
    fn only_a_starting_print_session_takes_its_first_task_at_start() {
        let start = |source| json!({"hook_event_name": "SessionStart", "source": source});
        assert!(ClaudeCode.starts_with_message(Some("sdk-cli"), &start("startup")));
        assert!(!ClaudeCode.starts_with_message(Some("cli"), &start("startup")));
        assert!(!ClaudeCode.starts_with_message(Some("sdk-py"), &start("resume")));
        assert!(!ClaudeCode.starts_with_message(None, &start("startup")));
    }

    #[test]
    fn a_claude_code_hook_means_what_claude_code_says() {
        let stop = json!({"session_id": "s", "hook_event_name": "Stop",
            "last_assistant_message": "Waiting on the build.",
            "background_tasks": [{"id": "bg-1", "status": "running"}], "session_crons": []});
        assert_eq!(
            ClaudeCode.on_hook(&stop).unwrap(),
            Happening::TurnEnded {
                last_words: Some("Waiting on the build.".into()),
                continued: false,
                background: vec!["bg-1".into()],
                wakes: vec![],
            }
        );
        let end = json!({"session_id": "s", "hook_event_name": "SessionEnd", "reason": "clear"});
        assert_eq!(ClaudeCode.on_hook(&end).unwrap(), Happening::Cleared);
        let codex = json!({"session_id": "s", "hook_event_name": "Interrupt"});
        assert!(ClaudeCode.on_hook(&codex).is_err());
    }
}
