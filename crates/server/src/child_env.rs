//! The environment of the processes the daemon starts (a launched session, a desk's delivery
//! command, tmux).
//!
//! A child inherits the daemon's environment unless told otherwise, and the daemon's
//! environment can hold the owner's bearer token (`TASKKEEPER_TOKEN`) and other tokens of
//! ours. A desk command is whatever the owner configured, fed an asker's words on its stdin;
//! a tmux client hands its environment to a tmux server that may not be the owner's. Neither
//! needs a token of ours, so none is passed on: [`scrub_secrets`] is called on every such
//! command before it is spawned. Everything else (PATH, HOME, the locale) is kept, since
//! the commands need it.

use std::ffi::{OsStr, OsString};

/// A variable that may carry a token of ours: `TASKKEEPER_` followed by a name containing
/// `TOKEN` (in any letter case: a name the owner spelled differently is still a secret).
pub(crate) fn is_secret(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        // Not UTF-8: not one of ours, whose names are ASCII.
        return false;
    };
    let upper = name.to_ascii_uppercase();
    upper
        .strip_prefix("TASKKEEPER_")
        .is_some_and(|rest| rest.contains("TOKEN"))
}

/// The names among `vars` that [`is_secret`] picks.
pub(crate) fn secrets_in(vars: impl IntoIterator<Item = (OsString, OsString)>) -> Vec<OsString> {
    vars.into_iter()
        .map(|(name, _)| name)
        .filter(|name| is_secret(name))
        .collect()
}

/// Take every secret of the daemon's environment out of what `command`'s child inherits.
/// Call it before setting the variables the child is meant to get: a removal after them
/// would drop one of those that happens to match.
pub(crate) fn scrub_secrets(command: &mut tokio::process::Command) {
    // Named even when unset now: the environment can change between this and the spawn.
    command.env_remove("TASKKEEPER_TOKEN");
    for name in secrets_in(std::env::vars_os()) {
        command.env_remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_of_ours_are_secrets_and_nothing_else_is() {
        let vars = [
            "TASKKEEPER_TOKEN",
            "TASKKEEPER_ASKER_TOKEN",
            "TASKKEEPER_TOKEN_FILE",
            "TASKKEEPER_GITHUB_TOKENS",
            "taskkeeper_token",
            "TASKKEEPER_DESK",
            "TASKKEEPER_URL",
            "GITHUB_TOKEN",
            "TOKEN",
            "PATH",
            "MY_TASKKEEPER_TOKEN",
        ]
        .map(|n| (OsString::from(n), OsString::from("v")));
        assert_eq!(
            secrets_in(vars),
            [
                "TASKKEEPER_TOKEN",
                "TASKKEEPER_ASKER_TOKEN",
                "TASKKEEPER_TOKEN_FILE",
                "TASKKEEPER_GITHUB_TOKENS",
                "taskkeeper_token",
            ]
            .map(OsString::from)
        );
    }

    /// What the child would get: every secret of the daemon's environment marked removed.
    #[test]
    fn a_scrubbed_command_takes_none_of_the_secrets() {
        let mut command = tokio::process::Command::new("true");
        scrub_secrets(&mut command);
        let removed: Vec<OsString> = command
            .as_std()
            .get_envs()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k.to_owned())
            .collect();
        assert!(removed.contains(&OsString::from("TASKKEEPER_TOKEN")));
        for name in secrets_in(std::env::vars_os()) {
            assert!(removed.contains(&name), "{name:?}");
        }
        assert!(removed.iter().all(|n| is_secret(n)), "{removed:?}");
    }
}
