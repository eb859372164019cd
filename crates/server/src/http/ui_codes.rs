//! Sign-in codes for the web UI: how `taskkeeper open` signs a browser page in without putting
//! the owner token on a command line.
//!
//! Why: a browser is started with its address as an argument, and every local user can read
//! a process's arguments (`/proc/PID/cmdline`, `ps`). So the address carries a code instead:
//! the owner (holding the token) mints it, the page trades it once for the token, and the code
//! is worth nothing a minute later. Someone who reads it off the command line after the page
//! has used it gets a refusal; the code never reaches a log or a `Referer` either, since it
//! travels in the fragment and in a request body. What remains: until the page has traded
//! it (as long as the browser takes to load the page), a local user who reads the code first
//! could trade it instead; the owner's page then says its link was already used, so that
//! does not go unnoticed.
//!
//! Codes live only in memory (a restart forgets them, which only means `taskkeeper open`
//! again), are kept as SHA-256 hashes so a lookup's timing says nothing about a code, and are
//! few: at most [`MAX_OUTSTANDING`] wait at once, so a runaway script cannot grow the map.
//! Time comes from the daemon's [`Clock`], so expiry is tested by moving a manual clock.

use std::collections::HashMap;
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
}

impl From<CodeError> for OwnerError {
    fn from(e: CodeError) -> Self {
        let kind = match e {
            CodeError::TooMany => OwnerErrorKind::Conflict,
            CodeError::Expired | CodeError::Unknown => OwnerErrorKind::Unauthorized,
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
}

/// The outstanding codes and the token they trade for.
#[derive(Debug, Clone)]
pub struct UiCodes {
    token: Token,
    clock: Arc<dyn Clock>,
    /// Code hash → when it lapses.
    codes: Arc<Mutex<HashMap<String, Timestamp>>>,
}

impl UiCodes {
    pub fn new(token: Token, clock: Arc<dyn Clock>) -> Self {
        Self {
            token,
            clock,
            codes: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// A new code, unless [`MAX_OUTSTANDING`] are waiting already.
    pub fn mint(&self) -> Result<MintedCode, CodeError> {
        let now = self.clock.now();
        let mut codes = self.codes.lock().unwrap_or_else(PoisonError::into_inner);
        // Lapsed codes no longer count against the limit.
        codes.retain(|_, expires| now < *expires);
        if codes.len() >= MAX_OUTSTANDING {
            return Err(CodeError::TooMany);
        }
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        let code = hex::encode(bytes);
        let expires_at = now.plus(CODE_LIFETIME);
        codes.insert(token_hash(&code), expires_at);
        Ok(MintedCode { code, expires_at })
    }

    /// The owner token for a code that was minted, is unused and has not lapsed; the code is
    /// spent by this call. A refused code leaves every other code as it was.
    pub fn redeem(&self, code: &str) -> Result<Token, CodeError> {
        let now = self.clock.now();
        let mut codes = self.codes.lock().unwrap_or_else(PoisonError::into_inner);
        match codes.remove(&token_hash(code)) {
            Some(expires) if now < expires => Ok(self.token.clone()),
            Some(_) => Err(CodeError::Expired),
            None => Err(CodeError::Unknown),
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
