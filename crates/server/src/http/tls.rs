//! The network listener's certificate, two of the three ways users run TLS (the third, a
//! proxy in front, needs none here): the owner's certificate and key (PEM files, looked at
//! again at every new connection and read again when they changed, so a renewal by certbot
//! or Caddy is served without a restart; a renewal that does not parse keeps the old one and
//! is logged), or a self-signed certificate the daemon makes on first start (rcgen) and keeps
//! in its data directory, 0600, for the names the listener is reached by. Askers pin the
//! latter by its SHA-256 fingerprint, which `taskkeeper asker add` prints and the cards name.
//!
//! rustls with ring as its crypto provider, passed explicitly (no process-wide default).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use sha2::{Digest as _, Sha256};

/// The self-signed certificate's files in the data directory.
pub const SELF_SIGNED_CERT: &str = "network-cert.pem";
pub const SELF_SIGNED_KEY: &str = "network-key.pem";
/// The names the self-signed certificate was made for, one a line: a new set makes a new
/// certificate.
pub const SELF_SIGNED_NAMES: &str = "network-cert.names";

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error(
        "cannot read the certificate file {path}: {reason}; give a PEM file with the chain, the server's certificate first"
    )]
    Cert { path: PathBuf, reason: String },
    #[error(
        "cannot read the key file {path}: {reason}; give the PEM private key (PKCS#8, PKCS#1 or SEC1) of the certificate"
    )]
    Key { path: PathBuf, reason: String },
    #[error("cannot make or keep the self-signed certificate in {dir}: {reason}")]
    SelfSigned { dir: PathBuf, reason: String },
    #[error("cannot set up TLS: {0}")]
    Config(String),
}

/// The provider every TLS object of the daemon uses.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The SHA-256 of a certificate (DER), as `AB:CD:…` (what `openssl x509 -fingerprint
/// -sha256` and Node's `fingerprint256` print).
pub fn fingerprint(cert: &[u8]) -> String {
    Sha256::digest(cert)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The certificate the listener serves.
#[derive(Debug)]
pub struct Certificates {
    source: Source,
}

#[derive(Debug)]
enum Source {
    SelfSigned(Arc<CertifiedKey>),
    Files {
        cert: PathBuf,
        key: PathBuf,
        loaded: Mutex<Loaded>,
    },
}

#[derive(Debug)]
struct Loaded {
    stamp: Stamp,
    key: Arc<CertifiedKey>,
}

/// What tells a changed file: its modification time, length and (Unix) inode, for both.
type Stamp = [(Option<SystemTime>, u64, u64); 2];

fn stamp(cert: &Path, key: &Path) -> Stamp {
    let one = |p: &Path| match std::fs::metadata(p) {
        Ok(m) => {
            #[cfg(unix)]
            let ino = std::os::unix::fs::MetadataExt::ino(&m);
            #[cfg(not(unix))]
            let ino = 0;
            (m.modified().ok(), m.len(), ino)
        }
        Err(_) => (None, 0, 0),
    };
    [one(cert), one(key)]
}

fn load(cert: &Path, key: &Path) -> Result<CertifiedKey, TlsError> {
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| TlsError::Cert {
            path: cert.to_owned(),
            reason: e.to_string(),
        })?;
    if chain.is_empty() {
        return Err(TlsError::Cert {
            path: cert.to_owned(),
            reason: "no CERTIFICATE in it".into(),
        });
    }
    let private = PrivateKeyDer::from_pem_file(key).map_err(|e| TlsError::Key {
        path: key.to_owned(),
        reason: e.to_string(),
    })?;
    CertifiedKey::from_der(chain, private, &provider()).map_err(|e| TlsError::Key {
        path: key.to_owned(),
        reason: format!("{e} (does the key belong to the certificate?)"),
    })
}

impl Certificates {
    /// The owner's certificate and key; refused now when they do not load.
    pub fn files(cert: &Path, key: &Path) -> Result<Self, TlsError> {
        let stamp = stamp(cert, key);
        let loaded = load(cert, key)?;
        Ok(Self {
            source: Source::Files {
                cert: cert.to_owned(),
                key: key.to_owned(),
                loaded: Mutex::new(Loaded {
                    stamp,
                    key: Arc::new(loaded),
                }),
            },
        })
    }

    /// The self-signed certificate for `names` in `data_dir`, made (0600) when there is none
    /// or it was made for other names.
    pub fn self_signed(data_dir: &Path, names: &[String]) -> Result<Self, TlsError> {
        let fail = |reason: String| TlsError::SelfSigned {
            dir: data_dir.to_owned(),
            reason,
        };
        let (cert, key) = (
            data_dir.join(SELF_SIGNED_CERT),
            data_dir.join(SELF_SIGNED_KEY),
        );
        let names_file = data_dir.join(SELF_SIGNED_NAMES);
        let wanted = names.join("\n");
        let kept = std::fs::read_to_string(&names_file).ok();
        if kept.as_deref() == Some(wanted.as_str())
            && let Ok(loaded) = load(&cert, &key)
        {
            return Ok(Self {
                source: Source::SelfSigned(Arc::new(loaded)),
            });
        }
        let mut params =
            rcgen::CertificateParams::new(names.to_vec()).map_err(|e| fail(e.to_string()))?;
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "Taskkeeper");
        let signing = rcgen::KeyPair::generate().map_err(|e| fail(e.to_string()))?;
        let made = params
            .self_signed(&signing)
            .map_err(|e| fail(e.to_string()))?;
        crate::private::replace_private(&key, signing.serialize_pem().as_bytes())
            .map_err(|e| fail(e.to_string()))?;
        crate::private::replace_private(&cert, made.pem().as_bytes())
            .map_err(|e| fail(e.to_string()))?;
        crate::private::replace_private(&names_file, wanted.as_bytes())
            .map_err(|e| fail(e.to_string()))?;
        let loaded = load(&cert, &key)?;
        tracing::info!(
            names = %names.join(", "),
            fingerprint = %fingerprint(&loaded.cert[0]),
            "made a self-signed certificate for the network listener"
        );
        Ok(Self {
            source: Source::SelfSigned(Arc::new(loaded)),
        })
    }

    /// The certificate served now (the files read again if they changed).
    pub fn current(&self) -> Arc<CertifiedKey> {
        match &self.source {
            Source::SelfSigned(key) => key.clone(),
            Source::Files { cert, key, loaded } => {
                let now = stamp(cert, key);
                let mut loaded = loaded.lock().unwrap_or_else(PoisonError::into_inner);
                if loaded.stamp != now {
                    loaded.stamp = now;
                    match load(cert, key) {
                        Ok(fresh) => {
                            tracing::info!(
                                cert = %cert.display(),
                                fingerprint = %fingerprint(&fresh.cert[0]),
                                "the network listener's certificate changed; serving the new one"
                            );
                            loaded.key = Arc::new(fresh);
                        }
                        // Mid-renewal (one file written, not the other) or broken: keep
                        // serving the last good one; the next change is read again.
                        Err(e) => tracing::warn!(error = %e, "kept the last good certificate"),
                    }
                }
                loaded.key.clone()
            }
        }
    }

    /// The SHA-256 fingerprint of the certificate served now.
    pub fn fingerprint(&self) -> String {
        fingerprint(&self.current().cert[0])
    }

    /// The rustls configuration that serves these certificates: HTTP/2 (for gRPC) and
    /// HTTP/1.1, as the client's ALPN picks.
    pub fn server_config(self: &Arc<Self>) -> Result<Arc<rustls::ServerConfig>, TlsError> {
        let mut config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(e.to_string()))?
            .with_no_client_auth()
            .with_cert_resolver(self.clone());
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

impl ResolvesServerCert for Certificates {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}
