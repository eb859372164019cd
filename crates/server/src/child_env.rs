//! What the daemon's children (launched sessions, desks' delivery commands, tmux) must not
//! inherit: the daemon's own secrets. A child runs code the owner did not write for
//! Taskkeeper (an agent, a desk's command), so no bearer token travels in its environment.

/// Whether an environment variable holds one of Taskkeeper's tokens.
pub(crate) fn is_secret(name: &str) -> bool {
    name.starts_with("TASKKEEPER_") && name.contains("TOKEN")
}

/// Remove every Taskkeeper token from the environment `command` passes on.
pub(crate) fn scrub_secrets(command: &mut tokio::process::Command) {
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(is_secret) {
            command.env_remove(name);
        }
    }
}
