//! Secrets stay where they are: the processes the daemon starts inherit no token, a
//! launched session's MCP configuration holds the worker token (never the owner's), and
//! `taskkeeper mcp-headers`, which anything running in a session can call, prints the worker
//! token.

use std::os::unix::fs::PermissionsExt as _;

use crate::support::{Served, TOKEN, stderr, stdout, until};

#[test]
fn a_launched_session_inherits_no_token_and_holds_only_the_worker_token() {
    let dir = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let seen = work.path().join("seen.txt");
    // A stand-in for `claude -p`: it writes down its environment and the MCP configuration
    // it was given, then reads its stdin until the daemon closes it.
    let stand_in = work.path().join("claude");
    std::fs::write(
        &stand_in,
        format!(
            "#!/bin/sh\nwhile [ \"$1\" != --mcp-config ]; do shift; done\n\
             {{ env; echo ---; cat \"$2\"; echo; echo END; }} > {}.tmp && mv {0}.tmp {0}\n\
             cat > /dev/null\n",
            seen.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&stand_in, std::fs::Permissions::from_mode(0o755)).unwrap();
    let env: Vec<(String, String)> = [
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("HOME", work.path().display().to_string()),
        ("TASKKEEPER_CLAUDE", stand_in.display().to_string()),
        // Secrets the daemon's own environment might hold: none may reach a child.
        (
            "TASKKEEPER_WORKER_TOKEN",
            "worker-secret-from-env".to_owned(),
        ),
        ("TASKKEEPER_ASKER_TOKEN", "asker-secret-from-env".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let d = Served::start_in(dir.path(), &env);
    let out = d.cli(&[
        "desk",
        "add",
        "web",
        "--dir",
        &work.path().display().to_string(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = d.cli(&["session", "launch", "web"]);
    assert!(out.status.success(), "{}", stderr(&out));

    let text = until("the stand-in's record", || {
        std::fs::read_to_string(&seen)
            .ok()
            .filter(|t| t.ends_with("END\n"))
    });
    let (environment, mcp) = text.split_once("---\n").unwrap();
    assert!(
        !environment.contains(TOKEN),
        "the owner token leaked: {environment}"
    );
    for line in environment.lines() {
        let name = line.split('=').next().unwrap_or("");
        assert!(
            !(name.starts_with("TASKKEEPER_") && name.contains("TOKEN")),
            "a token reached the session: {line}"
        );
    }
    assert!(environment.contains("TASKKEEPER_DESK=web"), "{environment}");
    let worker = std::fs::read_to_string(dir.path().join("worker-token")).unwrap();
    assert!(
        !mcp.contains(TOKEN),
        "the owner token is in the MCP configuration: {mcp}"
    );
    assert!(
        mcp.contains(&format!("Bearer {}", worker.trim())),
        "the MCP configuration holds the worker token: {mcp}"
    );
    assert!(mcp.contains("X-Taskkeeper-Session-Proof"), "{mcp}");
}

#[test]
fn mcp_headers_prints_the_worker_token_never_the_owners() {
    let dir = tempfile::tempdir().unwrap();
    let d = Served::start(dir.path());
    let out = d.cli(&["mcp-headers"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = stdout(&out);
    let worker = std::fs::read_to_string(dir.path().join("worker-token")).unwrap();
    assert!(printed.contains(worker.trim()), "{printed}");
    assert!(!printed.contains(TOKEN), "{printed}");
    let mode = std::fs::metadata(dir.path().join("worker-token"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    // The worker token opens the hook intake, and the owner API refuses it.
    let worker = worker.trim();
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .new_agent();
    let api = agent
        .get(format!("{}/api/tasks", d.url()))
        .header("Authorization", format!("Bearer {worker}"))
        .call()
        .unwrap();
    assert_eq!(api.status().as_u16(), 403);
}
