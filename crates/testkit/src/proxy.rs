//! The internet, as far as a test needs it: an HTTPS proxy (`HTTPS_PROXY=http://127.0.0.1:PORT`)
//! that answers `CONNECT ghcr.io:443` (or any host given a route) itself, with a certificate for
//! that name from a private test CA, and hands the decrypted bytes to a plain-HTTP server on
//! 127.0.0.1: the test registry for `ghcr.io`, the git server for `github.com`, a fake forge for
//! `api.github.com`. A program run with the proxy and the CA (`SSL_CERT_FILE`) reaches those
//! hosts by their real names, so a command can be run exactly as its documentation writes it.
//! A host without a route gets `403`: nothing leaves the machine.
//!
//! Written here rather than taken from a crate: the proxies made for intercepting TLS are
//! asynchronous servers (tokio, hyper) far larger than these blocking threads, which need to do
//! no more than tunnel one connection at a time to a fixed upstream.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// The longest `CONNECT` request head read.
const MAX_HEAD: usize = 8192;

/// A running proxy. Dropping it stops accepting connections (tunnels already open end with
/// their peers).
pub struct Proxy {
    port: u16,
    ca_pem: String,
    routes: Arc<Mutex<BTreeMap<String, SocketAddr>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Proxy {
    /// Starts the proxy, with one certificate for every name of `hosts` (and their routes given
    /// later with [`Proxy::route`]).
    #[must_use]
    pub fn start(hosts: &[&str]) -> Proxy {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "image-update test proxy CA");
        ca_params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
        let leaf_key = rcgen::KeyPair::generate().unwrap();
        let names: Vec<String> = hosts.iter().map(|h| (*h).to_owned()).collect();
        let mut leaf_params = rcgen::CertificateParams::new(names).unwrap();
        leaf_params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let leaf = leaf_params.signed_by(&leaf_key, &ca).unwrap();
        let chain = vec![CertificateDer::from(leaf.der().to_vec())];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let routes: Arc<Mutex<BTreeMap<String, SocketAddr>>> = Arc::default();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (accept_routes, accept_stop) = (Arc::clone(&routes), Arc::clone(&stop));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if accept_stop.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (routes, config) = (Arc::clone(&accept_routes), Arc::clone(&config));
                std::thread::spawn(move || {
                    let _ = tunnel(stream, &routes, config);
                });
            }
        });
        Proxy {
            port,
            ca_pem: ca.pem(),
            routes,
            stop,
        }
    }

    /// `CONNECT HOST:443` is answered with TLS for `host` and its bytes go to `upstream`
    /// (plain HTTP).
    pub fn route(&self, host: &str, upstream: SocketAddr) {
        self.routes
            .lock()
            .unwrap()
            .insert(format!("{host}:443"), upstream);
    }

    /// The proxy's URL, for `HTTPS_PROXY`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The PEM certificate of the CA the proxy's certificate is signed by.
    #[must_use]
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        // Wake the accepting thread so that it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Reads the `CONNECT` head, answers it, then relays between the TLS session with the client
/// and the upstream's plain bytes.
fn tunnel(
    mut client: TcpStream,
    routes: &Mutex<BTreeMap<String, SocketAddr>>,
    config: Arc<rustls::ServerConfig>,
) -> std::io::Result<()> {
    client.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() >= MAX_HEAD || client.read(&mut byte)? == 0 {
            return Ok(());
        }
        head.push(byte[0]);
    }
    client.set_read_timeout(None)?;
    let head = String::from_utf8_lossy(&head);
    let mut words = head.split_whitespace();
    let (Some("CONNECT"), Some(target)) = (words.next(), words.next()) else {
        client.write_all(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")?;
        return Ok(());
    };
    let upstream = routes.lock().unwrap().get(target).copied();
    let Some(upstream) = upstream else {
        client.write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")?;
        return Ok(());
    };
    let upstream = TcpStream::connect(upstream)?;
    client.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")?;
    let session = Arc::new(Mutex::new(
        rustls::ServerConnection::new(config).map_err(|e| std::io::Error::other(e.to_string()))?,
    ));
    // Upstream to client: encrypt what the server answers.
    let (mut from_server, mut to_client) = (upstream.try_clone()?, client.try_clone()?);
    let answers = Arc::clone(&session);
    let back = std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = from_server.read(&mut buf).unwrap_or(0);
            let mut tls = answers.lock().unwrap();
            if n == 0 {
                tls.send_close_notify();
            } else if tls.writer().write_all(&buf[..n]).is_err() {
                break;
            }
            while tls.wants_write() {
                if tls.write_tls(&mut to_client).is_err() {
                    return;
                }
            }
            if n == 0 {
                let _ = to_client.shutdown(Shutdown::Write);
                return;
            }
        }
    });
    // Client to upstream: decrypt what the client sends, and answer the handshake.
    let mut to_server = upstream;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = client.read(&mut buf).unwrap_or(0);
        if n == 0 {
            break;
        }
        let mut plain = Vec::new();
        {
            let mut tls = session.lock().unwrap();
            let mut offered = &buf[..n];
            while !offered.is_empty() {
                if tls.read_tls(&mut offered).is_err() {
                    break;
                }
                if tls.process_new_packets().is_err() {
                    let _ = tls.write_tls(&mut client);
                    return Ok(());
                }
            }
            let _ = tls.reader().read_to_end(&mut plain);
            while tls.wants_write() {
                tls.write_tls(&mut client)?;
            }
        }
        if !plain.is_empty() {
            to_server.write_all(&plain)?;
        }
    }
    let _ = to_server.shutdown(Shutdown::Write);
    let _ = back.join();
    Ok(())
}
