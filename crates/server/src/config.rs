//! Where the daemon listens and keeps its data, from flags and the environment.

use std::path::PathBuf;
use std::sync::Arc;

use taskkeeper_core::store::Synchronous;
use taskkeeper_core::{Clock, SystemClock};

/// The port the daemon listens on unless told otherwise.
pub const DEFAULT_PORT: u16 = 7717;

impl DaemonConfig {
    pub const fn default_port() -> u16 {
        DEFAULT_PORT
    }
}

#[derive(Debug, Clone)]
pub struct DaemonConfig {
    /// Port on 127.0.0.1; 0 picks a free one ([`crate::Daemon::addr`] tells which).
    pub port: u16,
    /// Holds the database, the token file and the log file.
    pub data_dir: PathBuf,
    /// The owner token; `None` reads or creates `<data_dir>/token`.
    pub token: Option<String>,
    pub synchronous: Synchronous,
    pub clock: Arc<dyn Clock>,
    /// Add the scripted `tck` desk for the A2A conformance kit.
    pub conformance: bool,
    /// Told besides the log and the owner's event stream when a task stalls (the tray app's
    /// desktop notifications).
    pub notifier: Option<Arc<dyn crate::notify::Notifier>>,
    /// Serve this built web UI (`ui/dist`) at `/ui/` (`taskkeeper serve --ui`); see
    /// [`crate::http::ui::locate`] for where it is looked for.
    pub ui_dir: Option<PathBuf>,
    /// The `claude` executable for the headless sessions the daemon launches
    /// (`TASKKEEPER_CLAUDE`, else `claude` on the PATH).
    pub claude: PathBuf,
    /// The `codex` executable for headless Codex sessions (`TASKKEEPER_CODEX`, else `codex`).
    pub codex: PathBuf,
    /// The `gemini` executable for headless Gemini sessions (`TASKKEEPER_GEMINI`, else
    /// `gemini`).
    pub gemini: PathBuf,
    /// The home whose agents' settings Connect changes (`None`: the user's, see
    /// [`crate::agents::connect::home`]).
    pub home: Option<PathBuf>,
    /// The `taskkeeper` binary connected agents run (`None`: see
    /// [`crate::agents::connect::cli_binary`]).
    pub taskkeeper_bin: Option<PathBuf>,
    /// The local time's offset from UTC in seconds, for the digest's time of day (`None`:
    /// the machine's, read at each offer).
    pub utc_offset_s: Option<i32>,
    /// The network listener for askers on other machines as `serve --listen` and its flags
    /// say, for this run (`None`: as the `network.*` settings say, following their changes).
    pub network: Option<taskkeeper_core::network::Network>,
    /// The network listener's handshake, header and body timeouts.
    pub network_timeouts: crate::http::network::Timeouts,
}

impl DaemonConfig {
    pub fn new(port: u16, data_dir: PathBuf) -> Self {
        Self {
            port,
            data_dir,
            token: None,
            synchronous: Synchronous::Full,
            clock: Arc::new(SystemClock),
            conformance: false,
            notifier: None,
            ui_dir: None,
            claude: crate::agents::claude_code::headless::program_from_env(),
            codex: crate::agents::codex::app_server::program_from_env(),
            gemini: crate::agents::gemini::acp::program_from_env(),
            home: None,
            taskkeeper_bin: None,
            utc_offset_s: None,
            network: None,
            network_timeouts: crate::http::network::Timeouts::default(),
        }
    }

    /// `TASKKEEPER_PORT`, `TASKKEEPER_DATA_DIR` and `TASKKEEPER_TOKEN`, with the defaults.
    pub fn from_env() -> Result<Self, ConfigError> {
        let port = match std::env::var("TASKKEEPER_PORT") {
            Ok(p) => p.trim().parse().map_err(|_| ConfigError::Port(p))?,
            Err(_) => DEFAULT_PORT,
        };
        let data_dir = match std::env::var_os("TASKKEEPER_DATA_DIR") {
            Some(d) if !d.is_empty() => PathBuf::from(d),
            _ => default_data_dir()?,
        };
        let mut config = Self::new(port, data_dir);
        config.token = std::env::var("TASKKEEPER_TOKEN")
            .ok()
            .filter(|t| !t.is_empty());
        Ok(config)
    }

    pub fn db_path(&self) -> PathBuf {
        self.data_dir.join("taskkeeper.db")
    }
}

/// The OS's per-user data directory for Taskkeeper (e.g. `~/.local/share/taskkeeper`).
pub fn default_data_dir() -> Result<PathBuf, ConfigError> {
    directories::ProjectDirs::from("", "", "taskkeeper")
        .map(|d| d.data_dir().to_owned())
        .ok_or(ConfigError::NoHome)
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("TASKKEEPER_PORT={0:?} is not a port number (0-65535)")]
    Port(String),
    #[error(
        "cannot find a home directory for the data; set TASKKEEPER_DATA_DIR or pass --data-dir"
    )]
    NoHome,
}
