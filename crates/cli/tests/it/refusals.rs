//! The daemon refuses to start, with a clear message and a non-zero exit, rather than damage
//! anything: a corrupt database, a second daemon on the same data, a port in use.

use std::net::TcpListener;

use crate::support::{Served, request};

#[test]
fn a_corrupt_database_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("taskkeeper.db");
    let garbage = b"not a database at all\n".repeat(500);
    std::fs::write(&db, &garbage).unwrap();
    let (code, stderr) = Served::try_start(dir.path(), 0).err().expect("must refuse");
    assert_ne!(code, Some(0));
    assert!(
        stderr.contains(&db.display().to_string()),
        "names the file: {stderr}"
    );
    assert!(
        stderr.contains("move it aside"),
        "says what to do: {stderr}"
    );
    assert_eq!(std::fs::read(&db).unwrap(), garbage);
}

#[test]
fn a_second_daemon_on_the_same_data_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let first = Served::start(dir.path());
    let (code, stderr) = Served::try_start(dir.path(), 0).err().expect("must refuse");
    assert_ne!(code, Some(0));
    assert!(
        stderr.contains("another Taskkeeper is already using")
            && stderr.contains("the tray app, or the service: `taskkeeper service status`"),
        "{stderr}"
    );
    assert_eq!(
        request(first.port, "GET", "/healthz", "").map(|r| r.0),
        Some(200),
        "the first keeps running"
    );
}

#[test]
fn a_port_in_use_is_refused() {
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = Served::try_start(dir.path(), port)
        .err()
        .expect("must refuse");
    assert_ne!(code, Some(0));
    assert!(
        stderr.contains(&format!("port {port}")) && stderr.contains("already in use"),
        "{stderr}"
    );
}
