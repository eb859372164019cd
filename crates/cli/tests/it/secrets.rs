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
    // Header names are case-insensitive; the launcher writes the lowercase forms of `agents::headers`.
    assert!(
        mcp.contains(taskkeeper_server::agents::headers::SESSION_PROOF),
        "{mcp}"
    );
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

/// The modes of the data directory and of every file in it.
fn modes(dir: &std::path::Path) -> Vec<(String, u32)> {
    let mut all = vec![(
        ".".to_owned(),
        std::fs::metadata(dir).unwrap().permissions().mode() & 0o777,
    )];
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            all.push((
                entry.file_name().to_string_lossy().into_owned(),
                entry.metadata().unwrap().permissions().mode() & 0o777,
            ));
        }
    }
    all.sort();
    all
}

/// Every task's text is in the data directory: it is 0700 and every file in it 0600, when
/// the daemon made them and when it finds them looser (a directory made by hand, files of an
/// older version).
#[test]
fn the_data_directory_and_every_file_in_it_are_private() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("data");
    let mut d = Served::start(&dir);
    // Something written, so the WAL and its index exist.
    assert!(
        d.cli(&["desk", "add", "web", "--dir", "/src/web"])
            .status
            .success()
    );
    let fresh = modes(&dir);
    for name in [
        ".",
        "taskkeeper.db",
        "taskkeeper.db-wal",
        "taskkeeper.db-shm",
        "taskkeeper.log",
        "worker-token",
    ] {
        assert!(
            fresh.iter().any(|(n, _)| n == name),
            "{name} missing: {fresh:?}"
        );
    }
    for (name, mode) in &fresh {
        let want = if name == "." { 0o700 } else { 0o600 };
        assert_eq!(*mode, want, "{name} is {mode:o}: {fresh:?}");
    }

    // Loosened while the daemon was down: all made private again at the next start.
    assert!(d.sigterm().success());
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    for (name, _) in &fresh {
        if name != "." {
            std::fs::set_permissions(dir.join(name), std::fs::Permissions::from_mode(0o644))
                .unwrap();
        }
    }
    let d = Served::start(&dir);
    assert!(d.cli(&["desk", "list"]).status.success());
    for (name, mode) in modes(&dir) {
        let want = if name == "." { 0o700 } else { 0o600 };
        assert_eq!(mode, want, "{name} is {mode:o} after a restart");
    }
}
