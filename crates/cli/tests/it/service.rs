//! `taskkeeper service install|status|uninstall` with the real binary, installed outside the
//! build directory, into a throwaway home: the unit it writes (checked by
//! `systemd-analyze verify` where that exists), and the refusal from a build directory.
//! Starting and stopping through a real user manager is on the manual checklist.

use std::path::Path;
use std::process::Command;

use crate::connect::installed;
use crate::support::{bin, stderr, stdout};

fn service(exe: &Path, home: &Path, args: &[&str]) -> std::process::Output {
    Command::new(exe)
        .arg("service")
        .args(args)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .unwrap()
}

#[cfg(target_os = "linux")]
#[test]
fn install_writes_a_systemd_user_unit_for_serve_and_uninstall_removes_it() {
    let home = tempfile::tempdir().unwrap();
    let exe = installed(home.path());
    let data = home.path().join("data dir");
    let out = service(
        &exe,
        home.path(),
        &[
            "install",
            "--no-start",
            "--port",
            "7801",
            "--data-dir",
            data.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let unit = home.path().join(".config/systemd/user/taskkeeper.service");
    assert!(
        stdout(&out).contains(&format!("wrote {}", unit.display()))
            && stdout(&out).contains("systemctl --user enable --now taskkeeper.service"),
        "{}",
        stdout(&out)
    );
    let text = std::fs::read_to_string(&unit).unwrap();
    let exec = format!(
        "ExecStart={} serve --port 7801 --data-dir \"{}\"",
        exe.display(),
        data.display()
    );
    assert!(text.lines().any(|l| l == exec), "{exec} in:\n{text}");
    assert!(text.lines().any(|l| l == "Restart=on-failure"), "{text}");
    assert!(
        text.lines().any(|l| l == "WantedBy=default.target"),
        "{text}"
    );

    // systemd's own reading of it: no unknown keys, the executable exists.
    if let Ok(verify) = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&unit)
        .output()
    {
        assert!(
            verify.status.success() && stderr(&verify).trim().is_empty(),
            "systemd-analyze verify: {}{}",
            stdout(&verify),
            stderr(&verify)
        );
    }

    let out = service(&exe, home.path(), &["status"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!("installed: {}", unit.display())),
        "{}",
        stdout(&out)
    );

    let out = service(&exe, home.path(), &["uninstall"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!unit.exists());
    let out = service(&exe, home.path(), &["status"]);
    assert!(stdout(&out).contains("not installed"), "{}", stdout(&out));
}

#[test]
fn install_refuses_a_binary_in_the_build_directory() {
    let home = tempfile::tempdir().unwrap();
    let out = service(Path::new(bin()), home.path(), &["install", "--no-start"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("inside a Cargo build directory")
            && stderr(&out).contains("nothing was changed"),
        "{}",
        stderr(&out)
    );
    assert!(!home.path().join(".config").exists());
}
