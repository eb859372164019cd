//! The Codex CLI adapter (agents.md §3): its hooks (`core::agent_hooks`, Codex's words, with
//! an `Interrupt` event of its own), the Stop handover, a `turn/start` into an idle TUI's
//! thread on the app server that runs it ([`super::wake`]), then the tmux paste, and
//! headless sessions as `codex app-server` ([`super::app_server`]).

use taskkeeper_core::agent_hooks::HookAgent;
use taskkeeper_core::delivery::{self, Method};
use taskkeeper_core::session::SessionId;
use taskkeeper_core::{AgentKind, Desk};

use super::app_server::{self, AppServer};
use crate::agents::adapter::{Adapter, LevelSignal};
use crate::agents::headers;
use crate::agents::launch::{Launch, LaunchConfig, LaunchError, McpAccess};

/// Where a Codex home keeps the control socket of its shared app server (the one an
/// interactive TUI runs its thread in), relative to the home.
pub(crate) const CONTROL_SOCKET: &str = "app-server-control/app-server-control.sock";

/// The control socket of the app server that runs the sessions of `codex_home` (their hooks'
/// `CODEX_HOME`).
pub(crate) fn control_socket(codex_home: &std::path::Path) -> std::path::PathBuf {
    codex_home.join(CONTROL_SOCKET)
}

pub(crate) struct Codex;

impl Adapter for Codex {
    fn kind(&self) -> AgentKind {
        AgentKind::Codex
    }

    fn name(&self) -> &'static str {
        "Codex CLI"
    }

    fn ways_in(&self) -> &'static [Method] {
        &[
            Method::Handover,
            Method::Stdin,
            Method::AppServer,
            Method::Paste,
            Method::Command,
        ]
    }

    fn app_server_socket(&self, hook_headers: &axum::http::HeaderMap) -> Option<String> {
        let home = hook_headers
            .get(headers::CODEX_HOME)
            .and_then(|v| v.to_str().ok())
            .map(std::path::Path::new)
            .filter(|h| h.is_absolute())?;
        Some(control_socket(home).to_string_lossy().into_owned())
    }

    fn level_signals(&self) -> &'static [LevelSignal] {
        &[LevelSignal::ProcessGone]
    }

    fn vocabulary(&self) -> Option<HookAgent> {
        Some(HookAgent::Codex)
    }

    fn hook_route(&self) -> Option<&'static str> {
        Some("/hooks/codex")
    }

    fn launch(
        &self,
        desk: &Desk,
        config: &LaunchConfig,
        id: &SessionId,
    ) -> Result<Option<Launch>, LaunchError> {
        let protocol = AppServer::new(
            desk.dir.clone(),
            delivery::session_note(desk),
            McpAccess::for_session(config, id),
        );
        Ok(Some(Launch::driven(
            app_server::spawn(&config.codex),
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
    fn codex_says_when_it_is_interrupted_and_is_woken_by_its_app_server_before_a_paste() {
        let caps = Codex.capabilities();
        assert!(caps.stop_can_continue && caps.launches_headless);
        assert!(caps.can_wake_idle && !caps.takes_start_message);
        assert!(!caps.lists_self_wakes);
        assert_eq!(
            Codex.ways_in(),
            [
                Method::Handover,
                Method::Stdin,
                Method::AppServer,
                Method::Paste,
                Method::Command
            ]
        );
    }

    #[test]
    fn a_codex_hook_means_what_codex_says() {
        let hook = |event: &str| json!({"session_id": "019a", "cwd": "/w", "hook_event_name": event, "turn_id": "t"});
        assert_eq!(
            Codex.on_hook(&hook("Interrupt")).unwrap(),
            Happening::Interrupted
        );
        assert_eq!(
            Codex.on_hook(&hook("UserPromptSubmit")).unwrap(),
            Happening::TurnStarted
        );
        assert!(Codex.on_hook(&hook("AfterAgent")).is_err());
    }
}
