//! The web UI at `/ui/` (`taskkeeper serve --ui`): its files load without the token, with
//! their security headers, while every `/api` call still needs it; no path under `/ui/`
//! reaches anything but the files read at start.

use taskkeeper_server::{Daemon, DaemonConfig, DaemonError};

use crate::support::{TOKEN, TestDaemon};

/// A daemon serving a tiny built UI from a temp directory.
struct UiDaemon {
    daemon: TestDaemon,
    _ui: tempfile::TempDir,
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn start(with_ui: bool) -> UiDaemon {
    let ui = tempfile::tempdir().unwrap();
    std::fs::write(
        ui.path().join("index.html"),
        "<!doctype html><script type=module src=./assets/app.js></script>",
    )
    .unwrap();
    std::fs::create_dir(ui.path().join("assets")).unwrap();
    std::fs::write(ui.path().join("assets/app.js"), "console.log(1)").unwrap();
    std::fs::write(ui.path().join("assets/app.css"), "body{}").unwrap();
    let dir = ui.path().to_owned();
    let daemon = TestDaemon::start_configured(|c| c.ui_dir = with_ui.then_some(dir));
    UiDaemon { daemon, _ui: ui }
}

struct Answer {
    status: u16,
    /// The response's headers, one `name: value` a line (for failure messages).
    head: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    }
}

impl UiDaemon {
    /// Exactly this request line and these headers (plus Host unless given).
    fn raw(&self, method: &str, target: &str, headers: &[(&str, &str)]) -> Answer {
        let host = (!headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")))
            .then(|| self.daemon.host());
        let headers: Vec<(String, String)> = headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let (status, headers, body) =
            self.daemon
                .http_exchange(method, target, host.as_deref(), &headers, "");
        let head = headers.iter().map(|(k, v)| format!("{k}: {v}\n")).collect();
        Answer {
            status,
            head,
            headers,
            body,
        }
    }
}

#[test]
fn the_page_loads_without_the_token_with_strict_headers() {
    let d = start(true);
    let page = d.raw("GET", "/ui/", &[]);
    assert_eq!(page.status, 200, "{}", page.head);
    assert!(page.body.contains("assets/app.js"), "{}", page.body);
    assert_eq!(
        page.header("content-type").as_deref(),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(
        page.header("content-security-policy").as_deref(),
        Some(
            "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'"
        )
    );
    assert_eq!(
        page.header("x-content-type-options").as_deref(),
        Some("nosniff")
    );

    for (path, kind) in [
        ("/ui/index.html", "text/html; charset=utf-8"),
        ("/ui/assets/app.js", "text/javascript; charset=utf-8"),
        ("/ui/assets/app.css", "text/css; charset=utf-8"),
    ] {
        let a = d.raw("GET", path, &[]);
        assert_eq!(a.status, 200, "{path}: {}", a.head);
        assert_eq!(a.header("content-type").as_deref(), Some(kind), "{path}");
        assert!(a.header("content-security-policy").is_some(), "{path}");
    }

    // `/ui` moves to `/ui/` so the page's relative asset paths resolve.
    let bare = d.raw("GET", "/ui", &[]);
    assert_eq!(bare.status, 308);
    assert_eq!(bare.header("location").as_deref(), Some("/ui/"));

    // A revalidation with the ETag costs no body.
    let etag = page.header("etag").unwrap();
    let again = d.raw("GET", "/ui/", &[("If-None-Match", &etag)]);
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
}

#[test]
fn only_reading_the_files_is_open_and_the_api_still_needs_the_token() {
    let d = start(true);
    assert_eq!(d.raw("GET", "/api/tasks", &[]).status, 401);
    assert_eq!(d.raw("GET", "/api/events", &[]).status, 401);
    // Only reading is open: other methods are no route at all, with or without a token.
    let bearer = format!("Bearer {TOKEN}");
    for method in ["POST", "PUT", "DELETE"] {
        for auth in [&[][..], &[("Authorization", bearer.as_str())][..]] {
            let a = d.raw(method, "/ui/", auth);
            assert_eq!(a.status, 405, "{method} /ui/: {}", a.head);
        }
    }
    let api = d.raw("GET", "/api/tasks", &[("Authorization", &bearer)]);
    assert_eq!(api.status, 200, "{}", api.body);

    // The Host and Origin checks still guard the page (DNS rebinding, foreign pages).
    assert_eq!(
        d.raw("GET", "/ui/", &[("Host", "evil.example:80")]).status,
        403
    );
    assert_eq!(
        d.raw("GET", "/ui/", &[("Origin", "http://evil.example")])
            .status,
        403
    );
}

#[test]
fn no_path_under_ui_reaches_anything_else() {
    let d = start(true);
    for target in [
        "/ui/../api/tasks",
        "/ui/%2e%2e/api/tasks",
        "/ui/..%2f..%2fCargo.toml",
        "/ui/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "/ui/assets/../../token",
        "/ui//etc/passwd",
        "/ui/nope.js",
    ] {
        let a = d.raw("GET", target, &[]);
        assert_eq!(a.status, 404, "{target}: {} {}", a.head, a.body);
        assert!(!a.body.contains("tasks\":"), "{target}: {}", a.body);
        assert!(!a.body.contains("root:"), "{target}: {}", a.body);
        assert!(a.header("content-security-policy").is_some(), "{target}");
    }
}

#[test]
fn without_ui_the_page_says_how_to_get_it_and_a_bad_dir_is_refused_at_start() {
    let d = start(false);
    let a = d.raw("GET", "/ui/", &[]);
    assert_eq!(a.status, 404);
    assert!(a.body.contains("taskkeeper serve --ui"), "{}", a.body);

    let data = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let mut config = DaemonConfig::new(0, data.path().to_owned());
    config.token = Some(TOKEN.to_owned());
    config.ui_dir = Some(empty.path().to_owned());
    let err = runtime().block_on(Daemon::start(config)).unwrap_err();
    assert!(matches!(err, DaemonError::Ui(_)), "{err}");
    assert!(err.to_string().contains("npm run build"), "{err}");
}
