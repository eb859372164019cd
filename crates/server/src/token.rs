//! The daemon's own bearer tokens: the owner's (from `TASKKEEPER_TOKEN`, else kept in
//! `<data-dir>/token`) and the workers' (always kept in `<data-dir>/worker-token`, so the
//! hook helper of any session, launched or not, finds it). Each is a random 32-byte token
//! in a file created with mode 0600 inside a 0700 directory (the mode is set at creation, so
//! there is no window in which another user could read it).

use std::fs;
use std::io::Write as _;
use std::path::Path;

use rand::RngCore as _;
use subtle::ConstantTimeEq as _;

/// The owner token's file in the data directory.
pub const OWNER_FILE: &str = "token";
/// The worker token's file in the data directory.
pub const WORKER_FILE: &str = "worker-token";

/// A bearer token. Comparison takes the same time wherever the first difference is.
#[derive(Clone)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        Self(hex::encode(bytes))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn matches(&self, candidate: &str) -> bool {
        self.0.as_bytes().ct_eq(candidate.as_bytes()).into()
    }

    /// Read `<dir>/<file>` (the owner's [`OWNER_FILE`], the workers' [`WORKER_FILE`]), or
    /// create it.
    pub fn load_or_create(dir: &Path, file: &str) -> std::io::Result<Token> {
        let path = dir.join(file);
        match fs::read_to_string(&path) {
            Ok(text) if !text.trim().is_empty() => return Ok(Token(text.trim().to_owned())),
            Ok(_) => {
                return Err(std::io::Error::other(format!(
                    "{} is empty; delete it and a new token will be made",
                    path.display()
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let token = Token::generate();
        let mut options = fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&path)?;
        file.write_all(token.0.as_bytes())?;
        file.sync_all()?;
        Ok(token)
    }
}
