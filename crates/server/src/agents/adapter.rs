//! The one interface every kind of agent implements (claude-code.md §17); the one lookup
//! from a kind to its adapter is `agents::adapter(kind)`, in `agents/mod.rs`, above the
//! kinds, so that this module, which every kind names, names none of them. The rest of the
//! daemon is agent-neutral: it asks the adapter what a hook means, which level signals a
//! session has, which ways lead into it and in which order, how a headless session of it is
//! launched, and what the kind can do, instead of knowing per-kind facts itself. Each kind's
//! adapter lives in that kind's module (`claude_code/adapter.rs`, `codex/adapter.rs`,
//! `gemini/adapter.rs`, `generic.rs`): adding an agent is a new module and one line in the
//! lookup (and its kind in core's `AgentKind`, with its hook vocabulary in
//! `core::agent_hooks` if it has hooks).

use serde_json::Value;
use taskkeeper_core::agent_hooks::{self, Happening, HookAgent, UnreadableHook};
use taskkeeper_core::delivery::Method;
use taskkeeper_core::session::SessionId;
use taskkeeper_core::{AgentKind, Desk};

use crate::agents::launch::{Launch, LaunchConfig, LaunchError};

/// What a kind of agent can do, as far as Taskkeeper's rules ask. Most of it follows from
/// the kind's ways in ([`Capabilities::of`]), so it cannot disagree with them; the rest is
/// what its hooks say ([`Adapter::lists_self_wakes`], [`Adapter::reports_generically`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// The end of its turn lists what the session scheduled to wake itself (Claude Code's
    /// `session_crons`), so it is not quiet until that is due.
    pub lists_self_wakes: bool,
    /// The hook at the end of its turn can continue the turn with a handover.
    pub stop_can_continue: bool,
    /// Something besides a paste starts a turn in an idle interactive session of it (Claude
    /// Code's waiter and inbox socket, Codex's app server).
    pub can_wake_idle: bool,
    /// Its SessionStart hook's answer can carry the session's first user message (Claude
    /// Code's `initialUserMessage`, in `-p` sessions).
    pub takes_start_message: bool,
    /// Taskkeeper can launch a headless session of it.
    pub launches_headless: bool,
    /// Its sessions may report through the generic intake (`taskkeeper report`); one whose
    /// hooks say more is refused there, so nothing reports it twice.
    pub reports_generically: bool,
}

impl Capabilities {
    /// What a kind with these ways in (best first) and these hook facts can do.
    pub fn of(ways: &[Method], lists_self_wakes: bool, reports_generically: bool) -> Self {
        Self {
            lists_self_wakes,
            stop_can_continue: ways.contains(&Method::Handover),
            can_wake_idle: ways
                .iter()
                .any(|w| matches!(w, Method::Waiter | Method::Inbox | Method::AppServer)),
            takes_start_message: ways.contains(&Method::StartMessage),
            launches_headless: ways.contains(&Method::Stdin),
            reports_generically,
        }
    }
}

/// A level signal a session can be read from, to correct what its hooks said (a hook that
/// did not fire, an interrupt with no closing event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LevelSignal {
    /// The process its hooks named is gone: the session ended.
    ProcessGone,
    /// The agent's own status file says idle, busy or waiting (Claude Code's, named by its
    /// hook helper).
    StatusFile,
}

/// One kind of agent, as the daemon needs to know it.
pub(crate) trait Adapter: Sync {
    fn kind(&self) -> AgentKind;

    /// Its name as the owner reads it ("Claude Code").
    fn name(&self) -> &'static str;

    /// What it can do: from its ways in and its hooks' facts below.
    fn capabilities(&self) -> Capabilities {
        Capabilities::of(
            self.ways_in(),
            self.lists_self_wakes(),
            self.reports_generically(),
        )
    }

    /// The end of its turn lists what the session scheduled to wake itself.
    fn lists_self_wakes(&self) -> bool {
        false
    }

    /// Its sessions may report through the generic intake (none whose hooks say more).
    fn reports_generically(&self) -> bool {
        true
    }

    /// The ways into a session of this kind, best first; `core::delivery::ranked` keeps the
    /// ones a session's means allow, in this order.
    fn ways_in(&self) -> &'static [Method];

    fn level_signals(&self) -> &'static [LevelSignal];

    /// Its hooks' vocabulary, when it has hooks of its own (`core::agent_hooks`).
    fn vocabulary(&self) -> Option<HookAgent> {
        None
    }

    /// The control socket of the app server its interactive sessions run in, from what its
    /// hook helper sent (Codex's home), when it has one: the way to start a turn in an idle
    /// session ([`Method::AppServer`]).
    fn app_server_socket(&self, _hook_headers: &axum::http::HeaderMap) -> Option<String> {
        None
    }

    /// The route its hooks come to (`/hooks/<kind>`), when it has hooks of its own.
    fn hook_route(&self) -> Option<&'static str> {
        None
    }

    /// What one hook payload of its means for its session.
    fn on_hook(&self, payload: &Value) -> Result<Happening, UnreadableHook> {
        match self.vocabulary() {
            Some(agent) => agent_hooks::read(agent, payload),
            None => Err(UnreadableHook::UnknownEvent {
                agent: self.kind().as_str(),
                event: agent_hooks::event_of(payload)?.to_owned(),
            }),
        }
    }

    /// Whether the session this SessionStart hook (`payload`, run with Claude Code's
    /// `entrypoint`) starts takes its first task in the hook's answer; only a kind that
    /// [`Capabilities::takes_start_message`] is asked.
    fn starts_with_message(&self, _entrypoint: Option<&str>, _payload: &Value) -> bool {
        false
    }

    /// How to launch a headless session `id` of this kind at `desk`; `None` for a kind
    /// Taskkeeper does not launch.
    fn launch(
        &self,
        desk: &Desk,
        config: &LaunchConfig,
        id: &SessionId,
    ) -> Result<Option<Launch>, LaunchError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::{adapter, adapters, kinds_that};

    #[test]
    fn every_kind_has_its_own_adapter() {
        for kind in AgentKind::ALL {
            assert_eq!(adapter(kind).kind(), kind, "{kind}'s adapter says it is");
        }
    }

    #[test]
    fn a_kind_with_hooks_takes_them_at_its_own_route_in_its_own_words() {
        for a in adapters() {
            let kind = a.kind();
            match a.vocabulary() {
                Some(words) => {
                    assert_eq!(words.kind(), kind);
                    assert_eq!(
                        a.hook_route().map(str::to_owned),
                        Some(format!("/hooks/{kind}"))
                    );
                }
                None => assert_eq!(a.hook_route(), None, "{kind} has no hooks of its own"),
            }
        }
    }

    /// Every kind can be reached by its desk's command, as the last way in, and a session
    /// of any kind ends when its process is gone.
    #[test]
    fn every_kind_ends_with_its_desks_command_and_its_process() {
        for a in adapters() {
            let kind = a.kind();
            assert_eq!(a.ways_in().last(), Some(&Method::Command), "{kind}");
            assert!(
                a.level_signals().contains(&LevelSignal::ProcessGone),
                "{kind}"
            );
        }
    }

    /// The capabilities follow from the ways in: a way added or taken away changes them.
    #[test]
    fn the_capabilities_follow_from_the_ways_in() {
        let none = Capabilities::of(&[Method::Paste, Method::Command], false, true);
        assert!(!none.stop_can_continue && !none.can_wake_idle);
        assert!(!none.takes_start_message && !none.launches_headless);
        let codex = Capabilities::of(
            &[Method::Handover, Method::Stdin, Method::AppServer],
            false,
            true,
        );
        assert!(codex.stop_can_continue && codex.can_wake_idle && codex.launches_headless);
        assert!(!codex.takes_start_message);
        assert!(Capabilities::of(&[Method::StartMessage], true, false).takes_start_message);
    }

    /// A kind that launches headless says how, with its own binary; the others launch
    /// nothing (and leave nothing behind).
    #[test]
    fn each_kind_that_launches_headless_says_how() {
        use crate::http::auth::Credentials;
        use crate::token::Token;
        let dir = tempfile::tempdir().unwrap();
        let worker = Token::new("worker-token");
        let config = LaunchConfig {
            program: "/opt/bin/claude".into(),
            codex: "/opt/bin/codex".into(),
            gemini: "/opt/bin/gemini".into(),
            port: 4100,
            credentials: Credentials::new(Token::new("owner-token"), worker.clone(), &[]),
            worker_token: worker,
            dir: dir.path().to_owned(),
        };
        let id = SessionId::generate();
        let mut programs = Vec::new();
        for a in adapters() {
            let kind = a.kind();
            let desk = Desk {
                name: "web".parse().unwrap(),
                agent: kind,
                dir: dir.path().to_owned(),
                deliver_command: None,
                auto_launch: false,
                created_at: taskkeeper_core::Timestamp::from_millis(0),
            };
            let launch = a.launch(&desk, &config, &id).unwrap();
            assert_eq!(
                launch.is_some(),
                a.capabilities().launches_headless,
                "{kind}"
            );
            let Some(launch) = launch else { continue };
            // Its own binary, which no other kind runs.
            let program = launch.spawn.program.to_string_lossy().into_owned();
            assert!(program.starts_with("/opt/bin/"), "{kind}: {program}");
            assert!(!programs.contains(&program), "{kind}: {program}");
            programs.push(program);
            assert!(
                launch.spawn.program_env.starts_with("TASKKEEPER_"),
                "{kind}"
            );
            // What it is given in proves the session, and no token is on its command line.
            assert!(
                !launch.spawn.args.iter().any(|a| a.contains("worker-token")),
                "{kind}: {:?}",
                launch.spawn.args
            );
            match &launch.cleanup {
                Some(file) => {
                    let text = std::fs::read_to_string(file).unwrap();
                    assert!(text.contains(id.as_str()), "{kind}: {text}");
                    assert!(launch.spawn.args.iter().any(|a| a == id.as_str()), "{kind}");
                }
                None => assert!(
                    launch.env.iter().any(|(var, value)| *var
                        == crate::agents::headers::LAUNCHED_SESSION_ENV
                        && value == id.as_str()),
                    "{kind}: its hooks stay silent"
                ),
            }
        }
        assert_eq!(programs.len(), 3, "{programs:?}");
        // Claude Code's file is the only one written.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn the_kinds_that_launch_headless_are_named_in_a_sentence() {
        assert_eq!(
            kinds_that(|c| c.launches_headless),
            "claude-code, codex and gemini"
        );
        assert_eq!(kinds_that(|c| c.lists_self_wakes), "claude-code");
        assert_eq!(kinds_that(|_| false), "");
    }
}
