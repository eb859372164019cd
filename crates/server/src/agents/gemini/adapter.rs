//! The Gemini CLI adapter (agents.md §7): its hooks (`core::agent_hooks`, Gemini's words;
//! an interrupt fires no closing event), the AfterAgent handover, the tmux paste into an idle
//! TUI, and headless sessions as `gemini --acp` ([`super::acp`], whose activity comes from
//! ACP itself, since some hooks do not fire there).

use taskkeeper_core::agent_hooks::HookAgent;
use taskkeeper_core::delivery::{self, Method};
use taskkeeper_core::session::SessionId;
use taskkeeper_core::{AgentKind, Desk};

use super::acp::{self, Acp};
use crate::agents::adapter::{Adapter, LevelSignal};
use crate::agents::launch::{Launch, LaunchConfig, LaunchError, McpAccess};

pub(crate) struct Gemini;

impl Adapter for Gemini {
    fn kind(&self) -> AgentKind {
        AgentKind::Gemini
    }

    fn name(&self) -> &'static str {
        "Gemini CLI"
    }

    fn ways_in(&self) -> &'static [Method] {
        &[
            Method::Handover,
            Method::Stdin,
            Method::Paste,
            Method::Command,
        ]
    }

    fn level_signals(&self) -> &'static [LevelSignal] {
        &[LevelSignal::ProcessGone]
    }

    fn vocabulary(&self) -> Option<HookAgent> {
        Some(HookAgent::Gemini)
    }

    fn hook_route(&self) -> Option<&'static str> {
        Some("/hooks/gemini")
    }

    fn launch(
        &self,
        desk: &Desk,
        config: &LaunchConfig,
        id: &SessionId,
    ) -> Result<Option<Launch>, LaunchError> {
        let protocol = Acp::new(
            desk.dir.clone(),
            delivery::session_note(desk),
            McpAccess::for_session(config, id),
        );
        Ok(Some(Launch::driven(
            acp::spawn(&config.gemini),
            Box::new(protocol),
            id,
        )))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use taskkeeper_core::agent_hooks::Happening;

    use super::*;

    #[test]
    fn gemini_continues_a_turn_but_says_nothing_of_an_interrupt() {
        let caps = Gemini.capabilities();
        assert!(caps.stop_can_continue && caps.launches_headless && caps.reports_generically);
        assert!(!caps.can_wake_idle && !caps.takes_start_message);
        assert!(!caps.lists_self_wakes);
        assert_eq!(Gemini.level_signals(), [LevelSignal::ProcessGone]);
    }

    #[test]
    fn a_gemini_hook_means_what_gemini_says() {
        let hook = |event: &str, extra: serde_json::Value| {
            let mut p = json!({"session_id": "5f1c", "cwd": "/w", "hook_event_name": event});
            if let (Some(p), Some(extra)) = (p.as_object_mut(), extra.as_object()) {
                p.extend(extra.clone());
            }
            p
        };
        assert_eq!(
            Gemini
                .on_hook(&hook("AfterAgent", json!({"prompt_response": "Done."})))
                .unwrap(),
            Happening::TurnEnded {
                last_words: Some("Done.".into()),
                continued: false,
                background: vec![],
                wakes: vec![],
            }
        );
        assert_eq!(
            Gemini
                .on_hook(&hook(
                    "Notification",
                    json!({"notification_type": "ToolPermission"})
                ))
                .unwrap(),
            Happening::WaitingOnOwner
        );
        assert!(Gemini.on_hook(&hook("Stop", json!({}))).is_err());
    }
}
