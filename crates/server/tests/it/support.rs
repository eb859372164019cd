//! A daemon on a free port and a temp data directory, and a raw HTTP/1.1 client so tests
//! control every header (Host, Origin, Content-Type) exactly.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};

use serde_json::Value;
use taskkeeper_server::{Daemon, DaemonConfig};

pub const TOKEN: &str = "test-token-0123456789abcdef0123456789abcdef";

pub struct TestDaemon {
    pub addr: SocketAddr,
    /// Kept so the data directory lives as long as the daemon.
    _dir: tempfile::TempDir,
    runtime: Option<tokio::runtime::Runtime>,
    daemon: Option<Daemon>,
}

impl TestDaemon {
    pub fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let mut config = DaemonConfig::new(0, dir.path().to_owned());
        config.token = Some(TOKEN.to_owned());
        let daemon = runtime.block_on(Daemon::start(config)).unwrap();
        Self {
            addr: daemon.addr(),
            _dir: dir,
            runtime: Some(runtime),
            daemon: Some(daemon),
        }
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
        let mut stream = TcpStream::connect(self.addr).unwrap();
        let mut request =
            format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
        for (k, v) in headers {
            request.push_str(&format!("{k}: {v}\r\n"));
        }
        request.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        stream.write_all(request.as_bytes()).unwrap();
        stream.write_all(body.as_bytes()).unwrap();
        let mut response = Vec::new();
        // The server may close early on an oversize body; what was read is enough.
        let _ = stream.read_to_end(&mut response);
        let text = String::from_utf8_lossy(&response).into_owned();
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let body = text
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_owned())
            .unwrap_or_default();
        (status, body)
    }

    /// The number of tasks of every state, straight from the API.
    pub fn task_count(&self) -> usize {
        let (status, body) = self.call("GET", "/api/tasks", None);
        assert_eq!(status, 200, "{body}");
        body["tasks"].as_array().map_or(0, Vec::len)
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
