//! The daemon refuses to start, with a clear message and a non-zero exit, rather than damage
//! anything: a corrupt database, a damaged write-ahead log, a second daemon on the same data,
//! a port in use, a network listener for askers that would speak plain HTTP across the network
//! without the owner's word (or lacks what its TLS needs).

use std::net::TcpListener;

use taskkeeper_core::store::wal;

use crate::durability::store_files;
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
fn a_log_whose_header_is_broken_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("taskkeeper.db");
    let mut daemon = Served::start(dir.path());
    let (status, _) = request(
        daemon.port,
        "POST",
        "/api/desks",
        r#"{"name":"web","dir":"/tmp","agent":"generic"}"#,
    )
    .unwrap();
    assert_eq!(status, 201);
    daemon.kill9();
    // SQLite ignores a log whose header fails its checksum, desk and all.
    let wal_file = wal::wal_path(&db);
    let mut bytes = std::fs::read(&wal_file).unwrap();
    bytes[14] ^= 0x01;
    std::fs::write(&wal_file, &bytes).unwrap();
    let before = store_files(&db);
    let (code, stderr) = Served::try_start(dir.path(), 0).err().expect("must refuse");
    assert_ne!(code, Some(0));
    assert!(
        stderr.contains(&wal_file.display().to_string())
            && stderr.contains("header fails its checksum")
            && stderr.contains("taskkeeper doctor --recover"),
        "{stderr}"
    );
    assert_eq!(store_files(&db), before);
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

#[test]
fn a_network_listener_without_tls_beyond_loopback_is_refused_unless_the_owner_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let flags = |extra: &[&'static str]| -> Vec<&'static std::ffi::OsStr> {
        [
            "--listen",
            "0.0.0.0:0",
            "--behind-proxy",
            "--trusted-proxy",
            "10.0.0.1",
            "--public-url",
            "https://box.example.net",
        ]
        .into_iter()
        .chain(extra.iter().copied())
        .map(std::ffi::OsStr::new)
        .collect()
    };
    let (code, stderr) = Served::try_start_with(dir.path(), &flags(&[]))
        .err()
        .expect("must refuse");
    assert_ne!(code, Some(0));
    assert!(
        stderr.contains("plain HTTP") && stderr.contains("--insecure-http"),
        "says why and what to do: {stderr}"
    );
    // With the owner's word it runs, and warns.
    let mut served = Served::start_with(dir.path(), &flags(&["--insecure-http"]));
    served.sigterm();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut served.child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(
        stderr.contains("warning: ") && stderr.contains("unencrypted"),
        "{stderr}"
    );

    // TLS with files it cannot read: refused, naming the file.
    let missing = dir.path().join("missing.pem");
    let missing = missing.to_str().unwrap();
    let flags: Vec<&std::ffi::OsStr> = [
        "--listen",
        "127.0.0.1:0",
        "--tls-cert",
        missing,
        "--tls-key",
        missing,
    ]
    .into_iter()
    .map(std::ffi::OsStr::new)
    .collect();
    let (_, stderr) = Served::try_start_with(dir.path(), &flags)
        .err()
        .expect("must refuse");
    assert!(stderr.contains("missing.pem"), "{stderr}");
}
