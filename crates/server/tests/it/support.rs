//! A daemon on a free port and a temp data directory, and a raw HTTP/1.1 client so tests
//! control every header (Host, Origin, Content-Type) exactly.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};

use serde_json::Value;
use taskkeeper_server::{Daemon, DaemonConfig};

pub const TOKEN: &str = "test-token-0123456789abcdef0123456789abcdef";

pub struct TestDaemon {
    pub addr: SocketAddr,
    pub data_dir: std::path::PathBuf,
    /// Kept so the data directory lives as long as the daemon.
    _dir: tempfile::TempDir,
    runtime: Option<tokio::runtime::Runtime>,
    daemon: Option<Daemon>,
}

impl TestDaemon {
    pub fn start() -> Self {
        Self::start_with_clock(std::sync::Arc::new(taskkeeper_core::SystemClock))
    }

    /// A daemon whose wall and monotonic time the test moves.
    pub fn start_with_clock(clock: std::sync::Arc<dyn taskkeeper_core::Clock>) -> Self {
        Self::start_configured(|c| c.clock = clock)
    }

    /// A daemon with its configuration changed by `change`.
    pub fn start_configured(change: impl FnOnce(&mut DaemonConfig)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let mut config = DaemonConfig::new(0, dir.path().to_owned());
        config.token = Some(TOKEN.to_owned());
        // Connect writes agents' settings in a home: never the real one in a test.
        config.home = Some(dir.path().join("home"));
        change(&mut config);
        let daemon = runtime.block_on(Daemon::start(config)).unwrap();
        Self {
            addr: daemon.addr(),
            data_dir: dir.path().to_owned(),
            _dir: dir,
            runtime: Some(runtime),
            daemon: Some(daemon),
        }
    }

    /// Stop the daemon and start a new one on the same data directory and port.
    pub fn restart(&mut self) {
        self.restart_configured(|_| {});
    }

    /// [`TestDaemon::restart`] with the new daemon's configuration changed by `change`.
    pub fn restart_configured(&mut self, change: impl FnOnce(&mut DaemonConfig)) {
        let (rt, d) = (self.runtime.as_ref().unwrap(), self.daemon.take().unwrap());
        rt.block_on(d.shutdown());
        let mut config = DaemonConfig::new(self.addr.port(), self.data_dir.clone());
        config.token = Some(TOKEN.to_owned());
        change(&mut config);
        let daemon = rt.block_on(Daemon::start(config)).unwrap();
        // `change` may have moved it to another port.
        self.addr = daemon.addr();
        self.daemon = Some(daemon);
    }

    pub fn daemon(&self) -> &Daemon {
        self.daemon.as_ref().unwrap()
    }

    pub fn set_setting(&self, key: &str, value: &str) {
        self.daemon().store().set_setting(key, value).unwrap();
    }

    /// A JSON-RPC call to `path` with `token`; `version` is the A2A-Version header.
    pub fn rpc(&self, path: &str, token: &str, version: Option<&str>, body: &Value) -> Value {
        let mut headers = vec![
            ("Authorization".to_owned(), format!("Bearer {token}")),
            ("Content-Type".to_owned(), "application/json".to_owned()),
        ];
        if let Some(v) = version {
            headers.push(("A2A-Version".to_owned(), v.to_owned()));
        }
        let (status, text) = self.raw("POST", path, &self.host(), &headers, &body.to_string());
        assert!(status == 200 || status == 404, "HTTP {status}: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    /// Open an SSE stream; each `data:` line arrives parsed on the channel, which closes
    /// when the server ends the stream.
    pub fn sse(
        &self,
        path: &str,
        token: &str,
        version: Option<&str>,
        body: &Value,
    ) -> std::sync::mpsc::Receiver<Value> {
        self.sse_as(path, Some(token), version, body)
    }

    /// [`TestDaemon::sse`] with the token left out when `None` (the conformance kit's way).
    pub fn sse_as(
        &self,
        path: &str,
        token: Option<&str>,
        version: Option<&str>,
        body: &Value,
    ) -> std::sync::mpsc::Receiver<Value> {
        let mut stream = TcpStream::connect(self.addr).unwrap();
        let body = body.to_string();
        let version = version
            .map(|v| format!("A2A-Version: {v}\r\n"))
            .unwrap_or_default();
        let auth = token
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        let request = format!(
            "POST {path} HTTP/1.0\r\nHost: {}\r\n{auth}Content-Type: application/json\r\n{version}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.host(),
            body.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead as _;
            for line in std::io::BufReader::new(stream).lines() {
                let Ok(line) = line else { return };
                if let Some(data) = line
                    .strip_prefix("data: ")
                    .or_else(|| line.strip_prefix("data:"))
                    && let Ok(v) = serde_json::from_str(data.trim())
                    && tx.send(v).is_err()
                {
                    return;
                }
            }
        });
        rx
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.addr.port())
    }

    /// A request with the right Host and token; `body` is sent as JSON when given.
    pub fn call(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let mut headers = vec![("Authorization".to_owned(), format!("Bearer {TOKEN}"))];
        let body = body.map(|b| {
            headers.push(("Content-Type".to_owned(), "application/json".to_owned()));
            b.to_string()
        });
        let (status, text) = self.raw(
            method,
            path,
            &self.host(),
            &headers,
            body.as_deref().unwrap_or(""),
        );
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// Send exactly these headers (plus Content-Length and Connection: close).
    pub fn raw(
        &self,
        method: &str,
        path: &str,
        host: &str,
        headers: &[(String, String)],
        body: &str,
    ) -> (u16, String) {
        let (status, _, body) = self.http_exchange(method, path, Some(host), headers, body);
        (status, body)
    }

    /// One HTTP/1.1 exchange with exactly `headers` (plus Content-Length, Connection: close,
    /// and Host when given): the status, the headers (names lower-cased), the body as text.
    pub fn http_exchange(
        &self,
        method: &str,
        path: &str,
        host: Option<&str>,
        headers: &[(String, String)],
        body: &str,
    ) -> (u16, Vec<(String, String)>, String) {
        let mut stream = TcpStream::connect(self.addr).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        if let Some(host) = host {
            request.push_str(&format!("Host: {host}\r\n"));
        }
        for (k, v) in headers {
            request.push_str(&format!("{k}: {v}\r\n"));
        }
        request.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        stream.write_all(request.as_bytes()).unwrap();
        // The server may close early on an oversize body; what was read is enough.
        let _ = stream.write_all(body.as_bytes());
        let mut response = Vec::new();
        let _ = stream.read_to_end(&mut response);
        let text = String::from_utf8_lossy(&response).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        (status, headers, body.to_owned())
    }

    /// The number of tasks of every state, straight from the API.
    pub fn task_count(&self) -> usize {
        let (status, body) = self.call("GET", "/api/tasks", None);
        assert_eq!(status, 200, "{body}");
        body["tasks"].as_array().map_or(0, Vec::len)
    }

    /// A task the owner gives desk `desk`; its id.
    pub fn add_task(&self, desk: &str, text: &str) -> String {
        let (status, body) = self.call(
            "POST",
            "/api/tasks",
            Some(&serde_json::json!({"desk": desk, "text": text})),
        );
        assert_eq!(status, 201, "{body}");
        body["id"].as_str().unwrap().to_owned()
    }

    /// Task `id` as the owner API shows it.
    pub fn task(&self, id: &str) -> Value {
        let (status, body) = self.call("GET", &format!("/api/tasks/{id}"), None);
        assert_eq!(status, 200, "{body}");
        body
    }

    /// A new asker named `name`; its token.
    pub fn add_asker(&self, name: &str) -> String {
        let (status, body) = self.call(
            "POST",
            "/api/askers",
            Some(&serde_json::json!({"name": name})),
        );
        assert_eq!(status, 201, "{body}");
        body["token"].as_str().unwrap().to_owned()
    }

    pub fn with_desk(&self, name: &str) {
        let (status, body) = self.call(
            "POST",
            "/api/desks",
            Some(&serde_json::json!({"name": name, "dir": "/tmp", "agent": "generic"})),
        );
        assert_eq!(status, 201, "{body}");
    }
}

impl Drop for TestDaemon {
    fn drop(&mut self) {
        if let (Some(rt), Some(d)) = (self.runtime.take(), self.daemon.take()) {
            rt.block_on(d.shutdown());
        }
    }
}

/// Wait for `what`, up to a bound that only a broken build reaches.
pub fn until<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A file's text, once it has any.
pub fn read(path: &std::path::Path) -> Option<String> {
    std::fs::read_to_string(path).ok().filter(|s| !s.is_empty())
}

/// A tmux server of the test's own with one pane running `cat`, standing in for an agent's
/// prompt box: its socket, the pane and the pane's process (the session's pid in the hooks).
pub struct Pane {
    pub socket: String,
    pub pane: String,
    pub pid: String,
}

impl Pane {
    pub fn start(dir: &std::path::Path) -> Pane {
        let socket = dir.join("tmux.sock").to_string_lossy().into_owned();
        let mut pane = Pane {
            socket,
            pane: String::new(),
            pid: String::new(),
        };
        pane.tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "tk",
            "-x",
            "200",
            "-y",
            "50",
            "cat",
        ]);
        let id = pane.tmux(&["display-message", "-p", "-t", "tk", "#{pane_id}"]);
        let pid = pane.tmux(&["display-message", "-p", "-t", "tk", "#{pane_pid}"]);
        (pane.pane, pane.pid) = (id, pid);
        pane
    }

    pub fn tmux(&self, args: &[&str]) -> String {
        let out = std::process::Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    pub fn reach(&self) -> [(&'static str, String); 3] {
        [
            ("X-Taskkeeper-Tmux-Pane", self.pane.clone()),
            ("X-Taskkeeper-Tmux", format!("{},1,0", self.socket)),
            ("X-Taskkeeper-Pid", self.pid.clone()),
        ]
    }

    pub fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", &self.pane])
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

/// The network listener's settings from `(key, value)` pairs, read as `Settings::set` reads
/// them (`serve --listen` builds them the same way).
pub fn network(pairs: &[(&str, &str)]) -> taskkeeper_server::Network {
    let mut settings = taskkeeper_core::settings::Settings::default();
    for (k, v) in pairs {
        settings.set(k, v).unwrap();
    }
    settings.network
}

impl TestDaemon {
    /// Where the network listener listens (it must be running).
    pub fn network_addr(&self) -> SocketAddr {
        let status = self.daemon().network();
        status
            .addr
            .unwrap_or_else(|| panic!("the network listener is not running: {status:?}"))
    }

    /// The self-signed certificate the network listener made, as PEM.
    pub fn self_signed_pem(&self) -> Vec<u8> {
        std::fs::read(self.data_dir.join("network-cert.pem")).unwrap()
    }
}

/// An HTTPS client as an asker on another machine runs it: it trusts only the certificates
/// it was given (it pinned the listener's), and checks the name it connects by.
pub struct Pinned {
    config: std::sync::Arc<rustls::ClientConfig>,
}

/// One HTTP exchange's answer: status, headers (names lower-cased), body, and the SHA-256
/// fingerprint of the certificate the server presented.
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub fingerprint: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

impl Pinned {
    pub fn new(pems: &[&[u8]]) -> Self {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject as _;
        let mut roots = rustls::RootCertStore::empty();
        for pem in pems {
            for cert in CertificateDer::pem_slice_iter(pem) {
                roots.add(cert.unwrap()).unwrap();
            }
        }
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        // Every connection a full handshake, so each sees the certificate served now.
        config.resumption = rustls::client::Resumption::disabled();
        Self {
            config: std::sync::Arc::new(config),
        }
    }

    /// One HTTP/1.1 exchange over TLS with `addr`, the server named `name` (its address, or
    /// a host name), with exactly `headers` (plus Host, Content-Length, Connection: close).
    pub fn exchange(
        &self,
        addr: SocketAddr,
        name: &str,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Answer {
        let server_name = rustls::pki_types::ServerName::try_from(name.to_owned()).unwrap();
        let connection = rustls::ClientConnection::new(self.config.clone(), server_name).unwrap();
        let tcp = TcpStream::connect(addr).unwrap();
        tcp.set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        let mut tls = rustls::StreamOwned::new(connection, tcp);
        let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            request.push_str(&format!("Host: {addr}\r\n"));
        }
        for (k, v) in headers {
            request.push_str(&format!("{k}: {v}\r\n"));
        }
        request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        // The server may answer and close before an oversize body is all sent.
        let _ = tls.write_all(request.as_bytes());
        let fingerprint = tls
            .conn
            .peer_certificates()
            .and_then(|c| c.first())
            .map(|c| taskkeeper_server::http::tls::fingerprint(c))
            .unwrap_or_default();
        let mut response = Vec::new();
        let _ = tls.read_to_end(&mut response);
        let text = String::from_utf8_lossy(&response).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        Answer {
            status,
            headers,
            body: body.to_owned(),
            fingerprint,
        }
    }
}
