//! Sign-in codes for the web UI: how `taskkeeper open` signs a browser page in without putting
//! any secret on a command line.
//!
//! Why: a browser is started with its address as an argument, and every local user can read
//! a process's arguments (`/proc/PID/cmdline`, `ps`); a watcher that read a sign-in code there
//! could trade it before the browser did (it was seen doing so within a millisecond). So the
//! owner (holding the token) mints a code, and the daemon writes it into a sign-in page, a
//! small HTML file in the data directory (`sign-in/`, 0700; the page 0600, under a random
//! name) that sends the browser on to `/ui/#code=...`; the browser is given the page's path,
//! which is worth nothing to anyone who cannot read the file (the pattern Jupyter uses). The
//! page trades the code once for the token; the code is worth nothing a minute later, and
//! never reaches a log or a `Referer`, since it travels in the fragment and in a request body.
//!
//! The sign-in page goes as soon as its code is used or refused, when its code has lapsed
//! (looked at whenever a code is minted or traded, and a minute after the page was written),
//! and at the daemon's start and stop. Codes live only in memory (a restart forgets them,
//! which only means `taskkeeper open` again), are kept as SHA-256 hashes so a lookup's timing
//! says nothing about a code, and are few: at most [`MAX_OUTSTANDING`] wait at once, so a
//! runaway script cannot grow the map. Time comes from the daemon's [`Clock`], so expiry is
//! tested by moving a manual clock.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rand::RngCore as _;
use taskkeeper_core::{Clock, Timestamp};

use crate::error::{OwnerError, OwnerErrorKind};
use crate::http::auth::token_hash;
use crate::token::Token;

/// How long a code can be traded: long enough for a browser to start, short enough that a
/// code copied from a process list is stale.
pub const CODE_LIFETIME: Duration = Duration::from_secs(60);

/// More unused codes than one person opens in a minute means something is looping.
pub const MAX_OUTSTANDING: usize = 16;

/// The directory of the data directory the sign-in pages are written in.
pub const PAGES_DIR: &str = "sign-in";

/// Why a code was not minted or not traded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodeError {
    #[error(
        "{MAX_OUTSTANDING} sign-in codes are already waiting to be used; each lapses {} s after it was made, so open one of them or try again in a minute",
        CODE_LIFETIME.as_secs()
    )]
    TooMany,
    #[error(
        "this sign-in code has expired (codes work for {} s); run `taskkeeper open` again",
        CODE_LIFETIME.as_secs()
    )]
    Expired,
    #[error("this sign-in code was already used or was never issued; run `taskkeeper open` again")]
    Unknown,
    #[error(
        "cannot write the sign-in page in {dir}: {reason}; run `taskkeeper open --print` and paste the address into your browser"
    )]
    Page { dir: PathBuf, reason: String },
}

impl From<CodeError> for OwnerError {
    fn from(e: CodeError) -> Self {
        let kind = match e {
            CodeError::TooMany => OwnerErrorKind::Conflict,
            CodeError::Expired | CodeError::Unknown => OwnerErrorKind::Unauthorized,
            CodeError::Page { .. } => OwnerErrorKind::Internal,
        };
        OwnerError {
            kind,
            message: e.to_string(),
        }
    }
}

/// A freshly minted code, shown once to the owner who asked for it.
#[derive(Debug, Clone)]
pub struct MintedCode {
    pub code: String,
    pub expires_at: Timestamp,
    /// The sign-in page that carries it, when one was asked for.
    pub page: Option<PathBuf>,
}

/// One code waiting to be traded.
#[derive(Debug)]
struct Waiting {
    expires: Timestamp,
    page: Option<PathBuf>,
}

/// Where sign-in pages are written, and the address they send the browser to.
#[derive(Debug)]
struct Pages {
    dir: PathBuf,
    /// `http://127.0.0.1:PORT/ui/`.
    ui: String,
}

/// The outstanding codes and the token they trade for.
#[derive(Debug, Clone)]
pub struct UiCodes {
    token: Token,
    clock: Arc<dyn Clock>,
    /// Code hash → when it lapses and its page.
    codes: Arc<Mutex<HashMap<String, Waiting>>>,
    pages: Option<Arc<Pages>>,
}

impl UiCodes {
    /// Codes without sign-in pages (see [`UiCodes::with_pages`]).
    pub fn new(token: Token, clock: Arc<dyn Clock>) -> Self {
        Self {
            token,
            clock,
            codes: Arc::new(Mutex::new(HashMap::new())),
            pages: None,
        }
    }

    /// Codes whose sign-in pages go in `data_dir`'s `sign-in/` and send the browser to the
    /// daemon on `port`. The directory is made private, and any page a daemon left behind
    /// (killed before it could remove it) is removed now.
    pub fn with_pages(mut self, data_dir: &Path, port: u16) -> std::io::Result<Self> {
        let dir = data_dir.join(PAGES_DIR);
        crate::private::ensure_private_dir(&dir)?;
        let pages = Pages {
            dir,
            ui: format!("http://127.0.0.1:{port}/ui/"),
        };
        pages.remove_all();
        self.pages = Some(Arc::new(pages));
        Ok(self)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiting>> {
        self.codes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new code, unless [`MAX_OUTSTANDING`] are waiting already.
    pub fn mint(&self) -> Result<MintedCode, CodeError> {
        self.mint_with(false)
    }

    /// A new code written into a new sign-in page (its path is in the answer).
    pub fn mint_page(&self) -> Result<MintedCode, CodeError> {
        self.mint_with(true)
    }

    fn mint_with(&self, with_page: bool) -> Result<MintedCode, CodeError> {
        let now = self.clock.now();
        let mut codes = self.lock();
        // Lapsed codes no longer count against the limit, and their pages go.
        lapse(&mut codes, now);
        if codes.len() >= MAX_OUTSTANDING {
            return Err(CodeError::TooMany);
        }
        let code = random_hex();
        let page = match (with_page, &self.pages) {
            (false, _) => None,
            (true, Some(pages)) => Some(pages.write(&code)?),
            (true, None) => {
                return Err(CodeError::Page {
                    dir: PathBuf::from(PAGES_DIR),
                    reason: "this daemon keeps no sign-in pages".to_owned(),
                });
            }
        };
        let expires_at = now.plus(CODE_LIFETIME);
        codes.insert(
            token_hash(&code),
            Waiting {
                expires: expires_at,
                page: page.clone(),
            },
        );
        Ok(MintedCode {
            code,
            expires_at,
            page,
        })
    }

    /// The owner token for a code that was minted, is unused and has not lapsed; the code is
    /// spent by this call, and its page removed. A refused code leaves every other code as it
    /// was.
    pub fn redeem(&self, code: &str) -> Result<Token, CodeError> {
        let now = self.clock.now();
        let mut codes = self.lock();
        let found = codes.remove(&token_hash(code));
        lapse(&mut codes, now);
        let Some(waiting) = found else {
            return Err(CodeError::Unknown);
        };
        remove_page(waiting.page.as_deref());
        if now < waiting.expires {
            Ok(self.token.clone())
        } else {
            Err(CodeError::Expired)
        }
    }

    /// Forget the codes that have lapsed and remove their pages: a minute after a page was
    /// written, in case nothing else looks.
    pub fn lapse(&self) {
        let now = self.clock.now();
        lapse(&mut self.lock(), now);
    }

    /// Remove every sign-in page (the daemon stops; its codes die with it).
    pub fn remove_pages(&self) {
        self.lock().clear();
        if let Some(pages) = &self.pages {
            pages.remove_all();
        }
    }
}

fn random_hex() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

fn lapse(codes: &mut HashMap<String, Waiting>, now: Timestamp) {
    codes.retain(|_, w| {
        let keep = now < w.expires;
        if !keep {
            remove_page(w.page.as_deref());
        }
        keep
    });
}

fn remove_page(page: Option<&Path>) {
    if let Some(page) = page
        && let Err(e) = std::fs::remove_file(page)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(page = %page.display(), error = %e, "cannot remove a web UI sign-in page");
    }
}

impl Pages {
    /// A new page under a random name that sends the browser to the UI with `code`.
    fn write(&self, code: &str) -> Result<PathBuf, CodeError> {
        let path = self.dir.join(format!("open-{}.html", &random_hex()[..32]));
        let address = format!("{}#code={code}", self.ui);
        // The code is hex and the address ours: nothing in it needs escaping.
        let html = format!(
            "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"referrer\" content=\"no-referrer\">\n\
             <meta http-equiv=\"refresh\" content=\"0;url={address}\">\n\
             <title>Taskkeeper</title>\n</head>\n<body>\n\
             <p>Opening Taskkeeper&hellip; if nothing happens, <a href=\"{address}\">continue here</a>.</p>\n\
             </body>\n</html>\n"
        );
        crate::private::ensure_private_dir(&self.dir)
            .and_then(|()| crate::private::write_new_private(&path, html.as_bytes()))
            .map_err(|e| CodeError::Page {
                dir: self.dir.clone(),
                reason: e.to_string(),
            })?;
        Ok(path)
    }

    /// Remove every page in the directory (ours only: the directory is private).
    fn remove_all(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "html") {
                remove_page(Some(&path));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use taskkeeper_core::ManualClock;

    use super::*;

    fn codes() -> (UiCodes, ManualClock) {
        let clock = ManualClock::new(Timestamp::from_millis(1_000_000));
        (
            UiCodes::new(Token::new("owner"), Arc::new(clock.clone())),
            clock,
        )
    }

    #[test]
    fn a_code_is_long_random_hex_and_lapses_a_minute_after_it_was_made() {
        let (codes, clock) = codes();
        let a = codes.mint().unwrap();
        let b = codes.mint().unwrap();
        assert_eq!(a.code.len(), 64);
        assert!(a.code.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a.code, b.code);
        assert_eq!(a.expires_at, clock.now().plus(CODE_LIFETIME));

        clock.advance(CODE_LIFETIME - Duration::from_millis(1));
        assert_eq!(codes.redeem(&a.code).unwrap().as_str(), "owner");
        clock.advance(Duration::from_millis(1));
        assert_eq!(codes.redeem(&b.code).unwrap_err(), CodeError::Expired);
        // Spent by the refusal too: it can never become valid again.
        assert_eq!(codes.redeem(&b.code).unwrap_err(), CodeError::Unknown);
    }

    #[test]
    fn lapsed_codes_free_their_place() {
        let (codes, clock) = codes();
        for _ in 0..MAX_OUTSTANDING {
            codes.mint().unwrap();
        }
        assert_eq!(codes.mint().unwrap_err(), CodeError::TooMany);
        clock.advance(CODE_LIFETIME);
        codes.mint().unwrap();
    }
}
