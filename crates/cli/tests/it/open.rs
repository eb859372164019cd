//! `taskkeeper open` against a real `taskkeeper serve --ui`: the address it prints holds a
//! one-time code and never the owner token, and that code signs a page in exactly once; what
//! it hands to the browser holds no secret at all, only the path of a private sign-in page.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::{Served, TOKEN, bin, stderr, stdout};

/// A daemon serving a one-file UI (`open` checks that `/ui/` answers).
fn served_with_ui() -> (Served, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let ui = dir.path().join("ui");
    std::fs::create_dir(&ui).unwrap();
    std::fs::write(ui.join("index.html"), "<!doctype html>").unwrap();
    let served = Served::start_with(&dir.path().join("data"), &["--ui".as_ref(), ui.as_os_str()]);
    (served, dir)
}

/// `POST /ui/session` as the page sends it: no token.
fn exchange(port: u16, code: &str) -> (u16, Value) {
    let body = serde_json::json!({ "code": code }).to_string();
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "POST /ui/session HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://127.0.0.1:{port}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap())
}

/// The code in an address `open` made, checking the address's form on the way.
fn code_in(url: &str, served: &Served) -> String {
    let prefix = format!("{}/ui/#code=", served.url());
    let code = url
        .strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("not {prefix}<code>: {url:?}"));
    assert!(
        code.len() == 64 && code.bytes().all(|b| b.is_ascii_hexdigit()),
        "{url}"
    );
    code.to_owned()
}

#[test]
fn open_print_gives_a_one_time_code_and_never_the_token() {
    let (served, _dir) = served_with_ui();
    let out = served.cli(&["open", "--print"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = stdout(&out);
    assert!(!printed.contains(TOKEN), "{printed}");
    assert!(!stderr(&out).contains(TOKEN), "{}", stderr(&out));
    let code = code_in(printed.trim(), &served);

    assert_eq!(exchange(served.port, &code).0, 200);
    let (status, refused) = exchange(served.port, &code);
    assert_eq!(status, 401, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("run `taskkeeper open` again"),
        "{refused}"
    );

    // Each run makes a new code.
    let again = stdout(&served.cli(&["open", "--print"]));
    assert_ne!(code_in(again.trim(), &served), code);
}

/// What the browser's command line holds is readable by every local user. The opener `open`
/// runs (here a stand-in `xdg-open` that records its arguments) gets the path of a sign-in
/// page that only the owner can read: a watcher that tries everything it read there cannot
/// sign in, while the browser (this test, reading the page as the owner's browser does and
/// following its address) signs in once, and the page is gone after that.
#[cfg(all(unix, not(target_os = "macos")))]
#[test]
fn a_watcher_of_the_browsers_command_line_cannot_sign_in() {
    use std::os::unix::fs::PermissionsExt as _;

    let (served, dir) = served_with_ui();
    let opener_dir = dir.path().join("bin");
    std::fs::create_dir(&opener_dir).unwrap();
    let args_file = dir.path().join("opener-args");
    let opener = opener_dir.join("xdg-open");
    std::fs::write(
        &opener,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\n",
            args_file.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&opener, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::env::join_paths(std::iter::once(opener_dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();

    let out = Command::new(bin())
        .arg("open")
        .env("TASKKEEPER_URL", served.url())
        .env("TASKKEEPER_TOKEN", TOKEN)
        .env("PATH", path)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stdout(&out).contains(TOKEN), "{}", stdout(&out));
    let args = std::fs::read_to_string(&args_file).unwrap();
    assert!(!args.contains(TOKEN), "{args}");

    // The watcher: everything it read, whole, after `code=`, and every long run of hex.
    let mut tries: Vec<String> = args.lines().map(str::to_owned).collect();
    tries.extend(args.split("code=").skip(1).map(|s| s.trim().to_owned()));
    tries.extend(
        args.split(|c: char| !c.is_ascii_hexdigit())
            .filter(|run| run.len() >= 16)
            .map(str::to_owned),
    );
    for guess in &tries {
        let (status, body) = exchange(served.port, guess);
        assert_ne!(
            status, 200,
            "signed in with {guess:?} read off the command line"
        );
        assert!(!body.to_string().contains(TOKEN));
    }

    // What it read is the path of a page in the data directory that only the owner can read.
    let page = std::path::PathBuf::from(args.trim());
    assert!(page.is_absolute(), "{args}");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&page), 0o600, "{}", page.display());
    assert_eq!(mode(page.parent().unwrap()), 0o700);

    // The browser opens the page and follows it to the UI with the code, and is signed in.
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains(TOKEN), "{html}");
    let address = html
        .split("url=")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("the page sends the browser nowhere: {html}"));
    let code = code_in(address, &served);
    assert_eq!(exchange(served.port, &code).0, 200);
    assert!(!page.exists(), "the page outlived its code");
    assert_eq!(exchange(served.port, &code).0, 401);
}
