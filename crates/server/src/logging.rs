//! Logs go through `tracing` to `<data-dir>/taskkeeper.log` (and warnings to stderr), so the
//! owner can read what the daemon did after the fact.

use std::path::Path;

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{Layer as _, fmt};

/// The log file's name inside the data directory.
pub const LOG_FILE: &str = "taskkeeper.log";

/// Start logging; keep the guard alive for as long as logs should be written.
/// `TASKKEEPER_LOG` (an `EnvFilter` directive such as `debug`) sets the file's level.
pub fn init(data_dir: &Path) -> std::io::Result<WorkerGuard> {
    crate::private::ensure_private_dir(data_dir)?;
    let file = crate::private::open_private_append(&data_dir.join(LOG_FILE))?;
    let (writer, guard) = tracing_appender::non_blocking(file);
    let file_filter =
        EnvFilter::try_from_env("TASKKEEPER_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let file_layer = fmt::layer()
        .with_writer(writer)
        .with_ansi(false)
        .with_filter(file_filter);
    let stderr_layer = fmt::layer()
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .with_filter(EnvFilter::new("warn"));
    // A second init (tests, an embedding app) keeps the first subscriber.
    let _ = tracing_subscriber::registry()
        .with(file_layer)
        .with(stderr_layer)
        .try_init();
    Ok(guard)
}
